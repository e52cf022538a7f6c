extension DownloadManager {
    // MARK: commands

    /// Queues a download and starts it when a slot is free. `id`, when given, is the one a store chose
    /// (it must be new); else the next after every id seen.
    /// With `paused`, it waits as paused until resumed.
    @discardableResult
    func add(_ job: DownloadJob, id given: DownloadID? = nil, paused: Bool = false) -> DownloadID {
        add([job], ids: given.map { [$0] }, paused: paused)[0]
    }

    /// Adds `jobs` in order (under `ids` when given, one for each), all before any of them starts: each then
    /// starts knowing what waits beside it (downloads to one host share a connection, `sharesHost`).
    package func add(_ jobs: [DownloadJob], ids given: [DownloadID]? = nil, paused: Bool = false) -> [DownloadID] {
        precondition(given == nil || given?.count == jobs.count, "one id for each job")
        let ids = jobs.indices.map { insert(jobs[$0], id: given?[$0], paused: paused) }
        if !paused { startWaiting() }
        return ids
    }

    private func insert(_ job: DownloadJob, id given: DownloadID?, paused: Bool) -> DownloadID {
        let id = given ?? nextID
        nextID = Swift.max(nextID, id + 1)
        let file = job.plannedName
        entries[id] = Entry(job: job, file: file)
        order.append(id)
        // Front ends show and keep the URL: never its password.
        continuation.yield(.added(id: id, url: URLRedaction.masked(job.url), file: file))
        if let limit = job.transfer.maxReceiveRate { continuation.yield(.fact(id: id, .limited(bytesPerSecond: limit))) }
        if paused { setState(id, .paused) } else { enqueue(id, starting: false) }
        return id
    }

    /// Takes back a download a previous process knew (the service, from its store), without an `.added`
    /// event: a finished one (done, failed, cancelled, paused) stays as it is, a queued or running one is
    /// queued again and continues from its `.part`.
    package func restore(_ job: DownloadJob, id: DownloadID, file: String, state: DownloadState) {
        nextID = Swift.max(nextID, id + 1)
        guard entries[id] == nil else { return }
        entries[id] = Entry(job: job, state: state.isFinished ? state : .queued, file: file)
        order.append(id)
        if !state.isFinished {
            waiting.append(id)
            startWaiting()
        }
    }

    func setBeforeDownloadingState(_ hook: (@Sendable (DownloadID) -> Void)?) {
        beforeDownloadingState = hook
    }

    /// Awaited by each download before its file takes its name, with the count of `events` up to its
    /// `started` (`eventsYielded`): the service returns once its store holds that event, so that the
    /// part's identity is stored before the rename a kill could otherwise separate from its "done". Hooks
    /// await it too, with the count up to the download's end: a hook starts once the store holds "done" (or
    /// "failed"), so a kill before that leaves a download that `restore` finds done and whose hook has not run.
    package func setNamingGate(_ gate: (@Sendable (Int) async -> Void)?) {
        namingGate = gate
    }

    /// Stops one download; its `.part` stays. A queued one never starts.
    package func cancel(_ id: DownloadID) {
        stop(id, as: .cancelled)
    }

    /// Cancel All: every queued download and every stored task handle.
    package func cancelAll() {
        for id in order { stop(id, as: .cancelled) }
    }

    /// Pauses a queued or running download, keeping `.part`.
    package func pause(_ id: DownloadID) {
        stop(id, as: .paused)
    }

    package func pauseAll() {
        for id in order { stop(id, as: .paused) }
    }

    /// Puts a paused download back in the queue.
    package func resume(_ id: DownloadID) {
        guard entries[id]?.state == .paused else { return }
        enqueue(id)
    }

    package func resumeAll() {
        for id in order where entries[id]?.state == .paused { enqueue(id) }
    }

    /// Resumes every paused download, then starts what the slots allow in the order of `queue` (the service's
    /// waiting queue): the first of it first, not the oldest.
    package func resumeAll(inQueueOrder queue: [DownloadID]) {
        for id in order where entries[id]?.state == .paused { enqueue(id, starting: false) }
        reorderQueue(queue)
        startWaiting()
    }

    /// Queues a failed or cancelled download again; it continues from what is on disk. One waiting for room
    /// is looked at again at once (it waits again if it still does not fit).
    package func retry(_ id: DownloadID) {
        switch entries[id]?.state {
        case .failed, .cancelled, .noSpace: enqueue(id)
        default: break
        }
    }

    /// Forgets a finished download, or one waiting for room (its files stay). One cancelled or paused a moment
    /// ago says so before its task has ended (the part's last checkpoint, the preview): it is forgotten once the task has ended, not
    /// left in the list (the TUI's `d` right after `c`, `haul rm` right after `haul cancel`).
    package func remove(_ id: DownloadID) async {
        if entries[id]?.state.isFinished == true, let task = running[id] { await task.value }
        guard let entry = entries[id], entry.state.isFinished || entry.state.isWaitingForRoom, running[id] == nil
        else { return }
        entries[id] = nil
        order.removeAll { $0 == id }
        continuation.yield(.removed(id: id))
        checkRoom()
    }

    /// Changes how many downloads run at once; more start at once when raised, and when lowered the
    /// running ones finish and no new one starts until fewer run.
    package func setConcurrency(_ count: Int) {
        concurrency = Swift.max(1, count)
        startWaiting()
    }

    /// Caps the receive rate of all downloads together (bytes per second, nil = none), at once.
    package func setOverallReceiveLimit(_ bytesPerSecond: Int64?) {
        overallLimit = bytesPerSecond.flatMap { $0 > 0 ? $0 : nil }
        downloader.driver.setOverallReceiveRate(overallLimit)
    }

    /// Sets one download's receive cap (bytes per second, nil = none), at once for its running transfers.
    /// It lasts for this download's later runs too (resume, retry).
    package func setReceiveLimit(_ id: DownloadID, _ bytesPerSecond: Int64?) {
        guard let entry = entries[id] else { return }
        entry.limit.set(bytesPerSecond)
        entries[id]?.job.transfer.maxReceiveRate = entry.limit.bytesPerSecond
        downloader.driver.limitsChanged()
        continuation.yield(.fact(id: id, .limited(bytesPerSecond: entry.limit.bytesPerSecond)))
    }

    /// The job as it will run next (its options, the name it continues under).
    package func job(of id: DownloadID) -> DownloadJob? {
        entries[id]?.job
    }

    /// Changes the options of a download that is not running (queued, paused or finished); false when it
    /// runs or is unknown.
    @discardableResult
    package func updateJob(_ id: DownloadID, _ change: (inout DownloadJob) -> Void) -> Bool {
        guard var job = entries[id]?.job, running[id] == nil, !(entries[id]?.state.isActive ?? true) else { return false }
        change(&job)
        entries[id]?.job = job
        entries[id]?.limit.set(job.transfer.maxReceiveRate)
        return true
    }

    /// The queued downloads in the order they will start.
    var queue: [DownloadID] {
        var seen = Set<DownloadID>()
        return waiting[waitingHead...].filter { id in
            entries[id]?.state == .queued && running[id] == nil && seen.insert(id).inserted
        }
    }

    /// Puts the queued downloads in `ids`' order, ahead of any queued one `ids` leaves out.
    package func reorderQueue(_ ids: [DownloadID]) {
        let queued = queue
        let wanted = Set(queued)
        var placed = Set<DownloadID>()
        var next = ids.filter { wanted.contains($0) && placed.insert($0).inserted }
        next += queued.filter { !placed.contains($0) }
        // Ids still finishing a cancel stay where they were: their task re-queues them when it ends.
        waiting = next
        waitingHead = 0
    }

    /// Returns when none of `ids` has a task any more (each stopped one has taken its last checkpoint).
    package func waitUntilStopped(_ ids: [DownloadID]) async {
        for id in ids {
            guard let task = running[id] else { continue }
            await task.value
        }
    }

    /// Returns when nothing is running or queued.
    package func waitUntilIdle() async {
        if isIdle { return }
        await withCheckedContinuation { idleWaiters.append($0) }
    }

    /// Ends the event stream (after the front end has what it needs).
    package func finishEvents() {
        continuation.finish()
    }
}

extension DownloadManager {
    /// A waiting download was moved to `position` of the waiting queue (the service's, which holds paused ones
    /// too), and `order` is that queue now: the queued ones start in its order, and every front end and the
    /// store hear of the move (`moved`) in line with the other events.
    package func move(_ id: DownloadID, to position: Int, order: [DownloadID]) {
        guard entries[id] != nil else { return }
        reorderQueue(order)
        continuation.yield(.moved(id: id, position: position))
    }

    /// `DownloadControl`'s move, for a screen that drives this manager itself (`--demo`): its waiting queue is
    /// the queued and paused downloads in the order of `order`, the queued ones as they will start.
    package func move(_ id: DownloadID, _ place: QueuePlace) async {
        var waits = QueueOrder()
        for other in queue { waits.append(other) }
        for other in order where entries[other]?.state == .paused { waits.append(other) }
        guard let position = waits.position(of: id, place) else { return }
        waits.move(id, to: position)
        move(id, to: position, order: waits.ids)
    }
}
