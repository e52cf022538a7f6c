import NIOConcurrencyHelpers

/// Runs downloads: a queue, at most `concurrency` at once, each in a `Task` whose handle is kept
/// so the user can cancel one, cancel all, pause and resume, and retry.
///
/// Events go to `events`, an unbounded stream read by one front end (the TUI, or a line reporter).
package actor DownloadManager {
    nonisolated let events: AsyncStream<ManagerEvent>
    /// With `batched`, the events instead of `events`, in the same order and counted the same way.
    package nonisolated let batches: EventBacklog?
    // The state below is internal rather than private only so that the actor's extensions in the other
    // DownloadManager+*.swift files reach it: it is the actor's, so still touched on the actor alone.
    let hooks = HookRunner()
    let continuation: EventSink
    let downloader: Downloader
    /// The downloader's clock, read as moments: what times each download's run (`finished`'s seconds).
    private let clock: MomentClock
    /// Downloads at once; `setConcurrency` changes it while the queue runs.
    var concurrency: Int
    /// The cap `setOverallReceiveLimit` set last.
    package internal(set) var overallLimit: Int64?
    var entries: [DownloadID: Entry] = [:]
    var order: [DownloadID] = []
    var waiting: [DownloadID] = []
    var waitingHead = 0
    /// The task bag: one stored handle per running download.
    var running: [DownloadID: Task<Void, Never>] = [:]
    /// Running downloads whose bytes have all come, now writing, syncing and naming their files: they hold no
    /// slot (at most `finishingLimit` of them at once; one past that keeps its slot until it can join them).
    var finishing: Set<DownloadID> = []
    /// Descriptors the running downloads may hold together (`OpenFilesLimit.downloadBudget`), and what the
    /// running ones hold by that count: a download that would take the process past its open-files limit
    /// waits for one to end, as for a slot (past the limit downloads fail with "Too many open files", and the
    /// runtime's libdispatch ends the process). Binds only under a low `ulimit -n`.
    private let descriptorBudget = OpenFilesLimit.downloadBudget()
    private var descriptorsHeld = 0
    var nextID = 1
    /// Downloads whose part is being checked against a new address, or whose `--refresh-with` command runs:
    /// none of them starts meanwhile, and the queue is not idle while one is.
    var refreshing: Set<DownloadID> = []
    /// Whether a metalink a server answers with is followed (`followMetalink`); in the service, what stores
    /// and queues its files (`followMetalinks(through:)`), and the metalink downloads whose files it is adding
    /// (the queue is not idle while one is).
    let followsMetalinks: Bool
    var metalinkAdopter: MetalinkAdopter?
    var adopting: Set<DownloadID> = []
    /// Called by a download's task when its first bytes have come, before it says `.downloading`: for tests
    /// that put a user's stop right there (`setBeforeDownloadingState`).
    var beforeDownloadingState: (@Sendable (DownloadID) -> Void)?
    var namingGate: (@Sendable (Int) async -> Void)?
    var idleWaiters: [CheckedContinuation<Void, Never>] = []
    /// With a watch, a download that does not fit its file system waits for room (`noSpace`) instead of
    /// failing; `roomWaiters` are those (in the order they began to wait), `roomTimer` their periodic look.
    let roomWatch: RoomWatch?
    var roomWaiters: [DownloadID] = []
    var roomTimer: Task<Void, Never>?
    /// The queue's time gate (`setTimeGate`): the schedule's window and the wall-clock time `--start-at` is
    /// compared with, as the service's clock last said. Open, and past every start time, until told.
    var timeGate = TimeGate()
    /// Downloads waiting for their time (`scheduled`), in queue order: `setTimeGate` puts them back in the queue.
    var held: [DownloadID] = []

    /// Downloads at once unless told (`--jobs`).
    package static let defaultConcurrency = 4
    /// What `--jobs` may be, wherever it is set (the command line, the control API, aria2's
    /// `max-concurrent-downloads`).
    package static let concurrencyRange = 1...64

    /// - Parameter observer: takes every event where it happens, on the thread that makes it, instead of
    ///   `events` (which then ends at once): for a front end that only prints lines, so that no task has to
    ///   wake for each event (a thousand small files make five thousand of them).
    /// - Parameter batched: the events go to `batches` instead of `events` (which then ends at once): for a
    ///   consumer that takes whatever came while it was busy at once (the service), rather than waking for
    ///   each event.
    /// - Parameter followsMetalinks: a download that the server answered as a metalink is replaced by the
    ///   downloads of the files it lists (`followMetalink`), as aria2's `--follow-metalink`.
    /// - Parameter roomWatch: a download that does not fit waits for room, looked at again as this says
    ///   (`checkRoom`), rather than failing.
    package init(downloader: Downloader = Downloader(), concurrency: Int = DownloadManager.defaultConcurrency,
                 observer: (@Sendable (ManagerEvent) -> Void)? = nil, batched: Bool = false,
                 followsMetalinks: Bool = false, roomWatch: RoomWatch? = nil) {
        self.downloader = downloader
        self.followsMetalinks = followsMetalinks
        self.roomWatch = roomWatch
        clock = MomentClock(downloader.clock)
        self.concurrency = max(1, concurrency)
        let stream: AsyncStream<ManagerEvent>.Continuation
        (events, stream) = AsyncStream.makeStream(of: ManagerEvent.self)
        batches = batched && observer == nil ? EventBacklog() : nil
        if observer != nil || batches != nil { stream.finish() }
        continuation = EventSink(stream: stream, batches: batches, observer: observer)
    }

    deinit {
        roomTimer?.cancel()
        continuation.finish()
    }

    /// How many events `events` (or `batches`) has been given so far. A consumer that counts the events it has handled
    /// knows, once its count reaches this, that it has handled every event of the commands made before
    /// (the service answers a client only then: what it acknowledged is stored).
    package nonisolated var eventsYielded: Int {
        continuation.yielded.withLockedValue { $0 }
    }

    // MARK: queries

    func state(of id: DownloadID) -> DownloadState? {
        entries[id]?.state
    }

    package var states: [(id: DownloadID, state: DownloadState)] {
        order.compactMap { id in entries[id].map { (id, $0.state) } }
    }

    /// How many task handles are stored (running downloads).
    package var runningCount: Int { running.count }

    /// The most downloads that have held a slot (transferring, not finishing) at once so far: for tests.
    private(set) var mostTransferring = 0

    /// The exit code over all downloads (SPEC precedence).
    package var exitCode: Int32 {
        aggregateExitCode(order.compactMap { entries[$0]?.state.exitCode })
    }

    var isIdle: Bool {
        running.isEmpty && waitingHead == waiting.count && refreshing.isEmpty && adopting.isEmpty
    }

    // MARK: the queue

    func setState(_ id: DownloadID, _ state: DownloadState) {
        guard let entry = entries[id] else { return }
        setState(entry, id, state)
    }

    /// The same for an entry in hand.
    func setState(_ entry: Entry, _ id: DownloadID, _ state: DownloadState) {
        guard entry.state != state else { return }
        entry.state = state
        continuation.yield(.state(id: id, state))
    }

    /// Queues `id`, and starts what the free slots allow unless `starting` is false (`add` starts a whole list
    /// at once).
    func enqueue(_ id: DownloadID, starting: Bool = true) {
        setState(id, .queued)
        // A task still finishing (after a cancel) re-queues this id itself when it ends.
        guard running[id] == nil else { return }
        waiting.append(id)
        if starting { startWaiting() }
    }

    /// Cancels the download's task, or takes it out of the queue. The row says `outcome` at once: the
    /// cancellation has reached the transfer by then; the task still records what it has (a checkpoint)
    /// and holds the `.part` until it ends, and a resume asked for meanwhile starts after that.
    func stop(_ id: DownloadID, as outcome: DownloadState) {
        guard let entry = entries[id] else { return }
        if let task = running[id] {
            // A cancel while a pause's task still ends (aria2's `remove` right after `pause`): the task is
            // cancelled already, and ends as the cancel it now is. It was answered, then dropped.
            if entry.stopIntent == .paused, entry.state == .paused, outcome == .cancelled {
                entry.stopIntent = .cancelled
                setState(id, .cancelled)
                return
            }
            guard entry.stopIntent == nil || entry.state == .queued || entry.state == .scheduled else { return }
            entries[id]?.stopIntent = outcome
            task.cancel()
            // The task says `.downloading` itself, from its own thread: after this, it does not.
            if let gate = entry.gate {
                entry.state = outcome
                gate.stop { continuation.yield(.state(id: id, outcome)) }
            } else {
                setState(id, outcome)
            }
        } else if entry.state == .queued || entry.state == .scheduled || entry.state.isWaitingForRoom
                    || (entry.state == .paused && outcome == .cancelled) {
            // Left in `waiting` (or `held`); skipped when its turn comes because it is no longer queued. A paused one
            // may be cancelled too (`haul cancel`, aria2's `remove`): its `.part` stays, as a running one's.
            // One waiting for room leaves `roomWaiters` when next looked at.
            setState(id, outcome)
            resumeIdleWaitersIfIdle()
        }
    }

    func startWaiting() {
        while running.count - finishing.count < concurrency, waitingHead < waiting.count {
            let id = waiting[waitingHead]
            guard let entry = entries[id], entry.state == .queued, running[id] == nil, !refreshing.contains(id) else {
                waitingHead += 1
                continue
            }
            if let waitsAs = hold(entry) {
                waitingHead += 1
                park(id, as: waitsAs)
                continue
            }
            // Past the open-files budget: it waits (at the head) for a running one to end.
            if !running.isEmpty,
               descriptorsHeld + OpenFilesLimit.descriptors(segments: entry.job.segments) > descriptorBudget {
                break
            }
            waitingHead += 1
            start(id)
            mostTransferring = Swift.max(mostTransferring, running.count - finishing.count)
        }
        if waitingHead == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            waitingHead = 0
        }
        resumeIdleWaitersIfIdle()
    }

    /// Whether another download to `id`'s host (and through the same proxy) is running, or is among the next
    /// `concurrency` waiting to start: then they share a connection (streams of one HTTP/2 connection over
    /// HTTPS). One further back in the queue would start after this one's bytes had mostly come.
    private func sharesHost(_ id: DownloadID, origin: String) -> Bool {
        func same(_ other: DownloadID) -> Bool { other != id && entries[other]?.origin == origin }
        if running.keys.contains(where: same) { return true }
        var looked = 0
        for other in waiting[waitingHead...] where entries[other]?.state == .queued {
            if same(other) { return true }
            looked += 1
            if looked == concurrency { break }
        }
        return false
    }

    private func start(_ id: DownloadID) {
        guard let entry = entries[id] else { return }
        var fitted = entry.job
        // Alone and still past the budget: with as many connections as the limit leaves room for.
        if OpenFilesLimit.descriptors(segments: fitted.segments) > descriptorBudget {
            fitted.segments = Swift.max(1, descriptorBudget - OpenFilesLimit.perDownload)
        }
        let job = fitted
        entry.descriptors = OpenFilesLimit.descriptors(segments: job.segments)
        descriptorsHeld += entry.descriptors
        setState(entry, id, .connecting)
        let downloader = self.downloader
        let clock = self.clock
        let continuation = self.continuation
        let partial = DownloadContext.isPartialCapable(name: entry.file)
        let limit = entry.limit
        let continuing = entry.claimedBefore
        let alone = !sharesHost(id, origin: entry.origin)
        let beforeDownloading = beforeDownloadingState
        let namingGate = self.namingGate
        let gate = StopGate()
        entry.gate = gate
        // The download blocks in file I/O: its task prefers the I/O executor's threads, never the actor or the
        // cooperative pool, from its first job to its last. Started from a download that hands over its slot
        // (`transferEnded`, `finished`: this actor's code running on that download's I/O thread), its first
        // job stays on that thread and runs right after the present job (`IOExecutor.startingHere`): the
        // start (the claim, the request handed to the curl thread) takes microseconds before it waits for
        // the answer, then the thread goes on with its own file. Before, each start woke another I/O thread:
        // 1000 files of 100 KiB made 2.1 wakes a file, now 1.0, and 17% fewer context switches; 2000 of 4 KiB
        // took 4% less wall and 9% less CPU (`--no-sync`; 3% and 5% durable). A start that blocks (a claim waiting up to a
        // second for a resumed part's lingering lock) holds back that thread's own file meanwhile.
        // Detached: a download's task takes nothing from the task that happens to start it (often the download
        // handing over its slot, whose task-local values the runtime copied into each new task, four tree
        // insertions and their allocations a file, to be shadowed at once by this download's own).
        running[id] = IOExecutor.shared.startingHere {
            Task.detached(executorPreference: IOExecutor.shared) { [self] in
                let began = clock.now
                let (result, path) = await DownloadContext.$supportsPartialDownloads.withValue(partial) {
                    await ReceiveLimit.$current.withValue(limit) {
                        await Self.perform(job, id: id, continuing: continuing, alone: alone, downloader: downloader,
                                           events: continuation, gate: gate, beforeDownloading: beforeDownloading,
                                           namingGate: namingGate) {
                            await self.transferEnded(id)
                        }
                    }
                }
                await self.finished(id, result, path: path, seconds: began.duration(to: clock.now).seconds)
            }
        }
    }

    /// A download's bytes have all come and its file waits for the disk (the write of what is still in memory,
    /// fsync, rename, the directory's fsync): its slot goes to the next in the queue, so that the next transfer
    /// runs while this file is made durable. `-j` counts the downloads that use the network. False when
    /// `finishingLimit` are finishing already: the slot stays.
    private func transferEnded(_ id: DownloadID) -> Bool {
        guard running[id] != nil, finishing.count < Self.finishingLimit(concurrency: concurrency) else { return false }
        finishing.insert(id)
        startWaiting()
        return true
    }

    /// How many downloads may finish without a slot at once: more than `concurrency`, since a file's fsyncs
    /// take longer than a small file's transfer, and fsyncs that wait together share the disk's cache flushes
    /// (1000 x 100 KiB at `-j 8`: with 8 at most, the slots stood empty 12-24% of the run). Each holds an
    /// I/O thread and at most a high watermark of bytes not yet written; 32 bounds both.
    static func finishingLimit(concurrency: Int) -> Int {
        Swift.max(concurrency, Swift.min(4 * concurrency, 32))
    }

    private func finished(_ id: DownloadID, _ result: Result<DownloadResult, HaulError>, path: String?,
                          seconds: Double) {
        running[id] = nil
        finishing.remove(id)
        guard let entry = entries[id] else { return }
        entry.gate = nil
        descriptorsHeld -= entry.descriptors
        entry.descriptors = 0
        // A resume or retry continues this very file, whatever the server calls it by then.
        if let path {
            entry.job.outputName = FilePath.baseName(of: path)
            entry.claimedBefore = true
        }
        switch result {
        case .success(let value):
            entry.file = value.file
            if !followMetalink(id, entry, value, seconds: seconds) { succeeded(id, entry, value, seconds: seconds) }
        case .failure(let error):
            if entry.state == .queued {
                // Resumed or retried while it was still stopping: its turn comes again now.
                waiting.append(id)
            } else if entry.state == .scheduled {
                // Stopped when its window closed: it waits, its bytes kept, for the next to open.
                parkAgain(id, entry)
            } else if entry.stopIntent == nil, !waitForRoom(id, entry, error) {
                // An address that stopped working, and a `--refresh-with` command to find the next one.
                let refresh = refreshAutomatically(id, entry, error, path: path)
                if !refresh.started { failedForGood(id, entry, refresh.error, path: path) }
            }
        }
        entry.stopIntent = nil
        // Its end may have left room for one that waits for it.
        checkRoom()
        startWaiting()
    }

    /// The download's file is there: it is done, and its `--on-complete` hook runs.
    func succeeded(_ id: DownloadID, _ entry: Entry, _ result: DownloadResult, seconds: Double) {
        continuation.yield(.finished(id: id, result, seconds: seconds))
        setState(id, .done)
        runCompletionHook(id, entry, result, after: storedGate())
    }

    /// The download has failed, or been cancelled, and nothing will try it again by itself: its state says so,
    /// and a failure runs its `--on-error` hook.
    func failedForGood(_ id: DownloadID, _ entry: Entry, _ error: HaulError, path: String?) {
        setState(id, error.category == .cancelled ? .cancelled : .failed(error))
        if error.category != .cancelled, let hook = entry.job.onError {
            let planned = path ?? FilePath.join(entry.job.outputDirectory, entry.file)
            hooks.run(hook, name: "--on-error", environment: Self.hookEnvironment(
                id: id, job: entry.job, path: planned, bytes: nil, error: error), after: storedGate())
        }
    }

    private func resumeIdleWaitersIfIdle() {
        guard isIdle, !idleWaiters.isEmpty else { return }
        let waiters = idleWaiters
        idleWaiters = []
        for waiter in waiters { waiter.resume() }
    }
}
