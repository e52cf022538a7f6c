import Synchronization
import NIOConcurrencyHelpers

/// Runs downloads: a queue, at most `concurrency` at once, each in a `Task` whose handle is kept
/// so the user can cancel one, cancel all, pause and resume, and retry.
///
/// Events go to `events`, an unbounded stream read by one front end (the TUI, or a line reporter).
package actor DownloadManager {
    /// A class, so that the dictionary holds a reference: a struct this size was copied, moved and
    /// destroyed through value witnesses at each `entries[id]?.field = ...` (about a tenth of the
    /// instructions of 1000 small downloads). It never leaves the actor.
    private final class Entry {
        var job: DownloadJob
        /// Its host, port and proxy (`sharesHost`): made when first asked, and again only once the URL or the
        /// proxy has changed. (Made at each change of the job before: a download's end sets its output name,
        /// and each file paid about 2,000 instructions for an origin it no longer needed.)
        var origin: String {
            if let made = originMade, made.url == job.url, made.proxy == job.transfer.proxy { return made.origin }
            let origin = CurlDriver.origin(of: job.url, proxy: job.transfer.proxy)
            originMade = OriginMade(url: job.url, proxy: job.transfer.proxy, origin: origin)
            return origin
        }
        private var originMade: OriginMade?

        private struct OriginMade {
            let url: String
            let proxy: String?
            let origin: String
        }
        var state: DownloadState = .queued
        var file: String
        /// What the user asked of the running task when it was cancelled.
        var stopIntent: DownloadState?
        /// The running task's: orders its `.downloading` against a stop's state.
        var gate: StopGate?
        /// Its live receive cap, shared by its transfers.
        let limit: ReceiveLimit
        /// A run of it claimed `job.outputName`'s part: the next run continues that one.
        var claimedBefore = false
        /// The descriptors its running task is counted for (`descriptorBudget`); 0 when none runs.
        var descriptors = 0

        init(job: DownloadJob, state: DownloadState = .queued, file: String) {
            self.job = job
            self.state = state
            self.file = file
            limit = ReceiveLimit(job.transfer.maxReceiveRate)
        }
    }

    nonisolated let events: AsyncStream<ManagerEvent>
    /// With `batched`, the events instead of `events`, in the same order and counted the same way.
    package nonisolated let batches: EventBacklog?
    private let hooks = HookRunner()
    private let continuation: EventSink
    private let downloader: Downloader
    /// Downloads at once; `setConcurrency` changes it while the queue runs.
    private(set) var concurrency: Int
    private var entries: [DownloadID: Entry] = [:]
    private var order: [DownloadID] = []
    private var waiting: [DownloadID] = []
    private var waitingHead = 0
    /// The task bag: one stored handle per running download.
    private var running: [DownloadID: Task<Void, Never>] = [:]
    /// Running downloads whose bytes have all come, now writing, syncing and naming their files: they hold no
    /// slot (at most `finishingLimit` of them at once; one past that keeps its slot until it can join them).
    private var finishing: Set<DownloadID> = []
    /// Descriptors the running downloads may hold together (`OpenFilesLimit.downloadBudget`), and what the
    /// running ones hold by that count: a download that would take the process past its open-files limit
    /// waits for one to end, as for a slot (past the limit downloads fail with "Too many open files", and the
    /// runtime's libdispatch ends the process). Binds only under a low `ulimit -n`.
    private let descriptorBudget = OpenFilesLimit.downloadBudget()
    private var descriptorsHeld = 0
    private var nextID = 1
    /// Called by a download's task when its first bytes have come, before it says `.downloading`: for tests
    /// that put a user's stop right there (`setBeforeDownloadingState`).
    private var beforeDownloadingState: (@Sendable (DownloadID) -> Void)?
    private var namingGate: (@Sendable (Int) async -> Void)?
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []

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
    package init(downloader: Downloader = Downloader(), concurrency: Int = DownloadManager.defaultConcurrency,
                 observer: (@Sendable (ManagerEvent) -> Void)? = nil, batched: Bool = false) {
        self.downloader = downloader
        self.concurrency = max(1, concurrency)
        let stream: AsyncStream<ManagerEvent>.Continuation
        (events, stream) = AsyncStream.makeStream(of: ManagerEvent.self)
        batches = batched && observer == nil ? EventBacklog() : nil
        if observer != nil || batches != nil { stream.finish() }
        continuation = EventSink(stream: stream, batches: batches, observer: observer)
    }

    deinit {
        continuation.finish()
    }

    /// How many events `events` (or `batches`) has been given so far. A consumer that counts the events it has handled
    /// knows, once its count reaches this, that it has handled every event of the commands made before
    /// (the service answers a client only then: what it acknowledged is stored).
    package nonisolated var eventsYielded: Int {
        continuation.yielded.withLockedValue { $0 }
    }

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

    /// Queues a failed or cancelled download again; it continues from what is on disk.
    package func retry(_ id: DownloadID) {
        switch entries[id]?.state {
        case .failed, .cancelled: enqueue(id)
        default: break
        }
    }

    /// Forgets a finished download (its files stay). One cancelled or paused a moment ago says so before its
    /// task has ended (the part's last checkpoint, the preview): it is forgotten once the task has ended, not
    /// left in the list (the TUI's `d` right after `c`, `haul rm` right after `haul cancel`).
    package func remove(_ id: DownloadID) async {
        if entries[id]?.state.isFinished == true, let task = running[id] { await task.value }
        guard let entry = entries[id], entry.state.isFinished, running[id] == nil else { return }
        entries[id] = nil
        order.removeAll { $0 == id }
        continuation.yield(.removed(id: id))
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

    /// The cap `setOverallReceiveLimit` set last.
    package private(set) var overallLimit: Int64?

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

    private var isIdle: Bool { running.isEmpty && waitingHead == waiting.count }

    // MARK: the queue

    private func setState(_ id: DownloadID, _ state: DownloadState) {
        guard let entry = entries[id] else { return }
        setState(entry, id, state)
    }

    /// The same for an entry in hand.
    private func setState(_ entry: Entry, _ id: DownloadID, _ state: DownloadState) {
        guard entry.state != state else { return }
        entry.state = state
        continuation.yield(.state(id: id, state))
    }

    /// Queues `id`, and starts what the free slots allow unless `starting` is false (`add` starts a whole list
    /// at once).
    private func enqueue(_ id: DownloadID, starting: Bool = true) {
        setState(id, .queued)
        // A task still finishing (after a cancel) re-queues this id itself when it ends.
        guard running[id] == nil else { return }
        waiting.append(id)
        if starting { startWaiting() }
    }

    /// Cancels the download's task, or takes it out of the queue. The row says `outcome` at once: the
    /// cancellation has reached the transfer by then; the task still records what it has (a checkpoint)
    /// and holds the `.part` until it ends, and a resume asked for meanwhile starts after that.
    private func stop(_ id: DownloadID, as outcome: DownloadState) {
        guard let entry = entries[id] else { return }
        if let task = running[id] {
            // A cancel while a pause's task still ends (aria2's `remove` right after `pause`): the task is
            // cancelled already, and ends as the cancel it now is. It was answered, then dropped.
            if entry.stopIntent == .paused, entry.state == .paused, outcome == .cancelled {
                entry.stopIntent = .cancelled
                setState(id, .cancelled)
                return
            }
            guard entry.stopIntent == nil || entry.state == .queued else { return }
            entries[id]?.stopIntent = outcome
            task.cancel()
            // The task says `.downloading` itself, from its own thread: after this, it does not.
            if let gate = entry.gate {
                entry.state = outcome
                gate.stop { continuation.yield(.state(id: id, outcome)) }
            } else {
                setState(id, outcome)
            }
        } else if entry.state == .queued || (entry.state == .paused && outcome == .cancelled) {
            // Left in `waiting`; skipped when its turn comes because it is no longer queued. A paused one
            // may be cancelled too (`haul cancel`, aria2's `remove`): its `.part` stays, as a running one's.
            setState(id, outcome)
            resumeIdleWaitersIfIdle()
        }
    }

    private func startWaiting() {
        while running.count - finishing.count < concurrency, waitingHead < waiting.count {
            let id = waiting[waitingHead]
            guard let entry = entries[id], entry.state == .queued, running[id] == nil else {
                waitingHead += 1
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
                let began = ContinuousClock.now
                let (result, path) = await DownloadContext.$supportsPartialDownloads.withValue(partial) {
                    await ReceiveLimit.$current.withValue(limit) {
                        await Self.perform(job, id: id, continuing: continuing, alone: alone, downloader: downloader,
                                           events: continuation, gate: gate, beforeDownloading: beforeDownloading,
                                           namingGate: namingGate) {
                            await self.transferEnded(id)
                        }
                    }
                }
                await self.finished(id, result, path: path, seconds: (ContinuousClock.now - began).seconds)
            }
        }
    }

    /// The download itself, outside the actor: events go straight to the stream. Also returns the path
    /// the download claimed, so that a resume or retry continues the same `.part`.
    private static func perform(_ job: DownloadJob, id: DownloadID, continuing: Bool, alone: Bool,
                                downloader: Downloader, events: EventSink, gate: StopGate,
                                beforeDownloading: (@Sendable (DownloadID) -> Void)?,
                                namingGate: (@Sendable (Int) async -> Void)?,
                                transferEnded: @escaping @Sendable () async -> Bool)
        async -> (Result<DownloadResult, HaulError>, String?)
    {
        if let problem = URLCheck.problem(with: job.url) { return (.failure(HaulError(.usage, problem)), nil) }
        var downloading = false
        var claimed: String?
        // The count of events up to this download's latest `started`: only with a naming gate (the service's).
        let startedMark = namingGate == nil ? nil : NIOLockedValueBox<Int?>(nil)
        var beforeNaming: (@Sendable () async -> Void)?
        if let namingGate, let startedMark {
            beforeNaming = {
                let mark = startedMark.withLockedValue { $0 }
                if let mark { await namingGate(mark) }
            }
        }
        do {
            return (.success(try await downloader.download(job, continuing: continuing, alone: alone,
                                                           transferEnded: transferEnded,
                                                           beforeNaming: beforeNaming) { event in
                switch event {
                case .started(let file, let path, let total, let part):
                    claimed = path
                    events.yield(.started(id: id, file: file, path: path, total: total, part: part))
                    if let startedMark {
                        let count = events.yielded.withLockedValue { $0 }
                        startedMark.withLockedValue { $0 = count }
                    }
                case .progress(let progress):
                    if !downloading {
                        downloading = true
                        beforeDownloading?(id)
                        gate.unlessStopped { events.yield(.state(id: id, .downloading)) }
                    }
                    events.yield(.progress(id: id, progress))
                case .fact(let fact):
                    events.yield(.fact(id: id, fact))
                }
            }), claimed)
        } catch {
            return (.failure(error), claimed)
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
            continuation.yield(.finished(id: id, value, seconds: seconds))
            setState(id, .done)
            runCompletionHook(id, entry, value, after: storedGate())
        case .failure(let error):
            if entry.state == .queued {
                // Resumed or retried while it was still stopping: its turn comes again now.
                waiting.append(id)
            } else if entry.stopIntent == nil {
                setState(id, error.category == .cancelled ? .cancelled : .failed(error))
                if error.category != .cancelled, let hook = entry.job.onError {
                    let planned = path ?? FilePath.join(entry.job.outputDirectory, entry.file)
                    hooks.run(hook, name: "--on-error", environment: Self.hookEnvironment(
                        id: id, job: entry.job, path: planned, bytes: nil, error: error), after: storedGate())
                }
            }
        }
        entry.stopIntent = nil
        startWaiting()
    }

    /// What a hook started now waits for: the naming gate with every event so far (nil without a gate).
    private func storedGate() -> (@Sendable () async -> Void)? {
        guard let namingGate else { return nil }
        let mark = eventsYielded
        return { await namingGate(mark) }
    }

    /// Runs the `--on-complete` hook of a download that `restore` found done: the service was killed after its
    /// file took its name and before the store held its "done", so the hook (which waits for that) never ran.
    /// Called once the store holds the "done" now found.
    package func runCompletionHook(_ id: DownloadID, _ result: DownloadResult) {
        guard let entry = entries[id] else { return }
        runCompletionHook(id, entry, result, after: nil)
    }

    /// The entry's job is read only when it has a hook: a copy of it costs every string it holds. `gate`
    /// too is made only then.
    private func runCompletionHook(_ id: DownloadID, _ entry: Entry, _ result: DownloadResult,
                                   after gate: @autoclosure () -> (@Sendable () async -> Void)?) {
        guard let hook = entry.job.onComplete else { return }
        hooks.run(hook, name: "--on-complete", environment: Self.hookEnvironment(
            id: id, job: entry.job, path: result.path, bytes: result.bytes, error: nil), after: gate())
    }

    /// What a hook is told, in its environment: nothing secret (the URL's password is masked).
    static func hookEnvironment(id: DownloadID, job: DownloadJob, path: String, bytes: Int64?,
                                error: HaulError?) -> [String: String] {
        let absolute = FilePath.absolute(path)
        return [
            "HAUL_ID": String(id),
            "HAUL_URL": URLRedaction.masked(job.url),
            "HAUL_FILE": absolute,
            "HAUL_NAME": FilePath.baseName(of: absolute),
            "HAUL_DIR": FilePath.absolute(job.outputDirectory),
            "HAUL_SIZE": bytes.map(String.init) ?? "",
            "HAUL_STATUS": error == nil ? "done" : "failed",
            "HAUL_EXIT_CODE": String(error?.category.exitCode ?? 0),
            "HAUL_ERROR": error?.message ?? "",
        ]
    }

    /// Returns once every `--on-complete`/`--on-error` command started so far has ended (a run waits for
    /// them before it exits; they never hold a download slot).
    func waitForHooks() async {
        await hooks.waitForAll()
    }

    /// Returns once every hook has started; none waits at the naming gate any more (see `setNamingGate`).
    package func waitForHookStarts() async {
        await hooks.waitForStarts()
    }

    /// Hooks waiting at the naming gate for the store to hold their download's end.
    var hooksWaitingToStart: Int { hooks.waitingToStart }

    private func resumeIdleWaitersIfIdle() {
        guard isIdle, !idleWaiters.isEmpty else { return }
        let waiters = idleWaiters
        idleWaiters = []
        for waiter in waiters { waiter.resume() }
    }
}

/// One run of a download: its task reports `.downloading` from its own thread, and a user's stop its state
/// from the actor; whichever comes second must be the last word, so both report under this lock.
final class StopGate: Sendable {
    private let stopped = Mutex(false)

    /// Runs `report` unless the run was stopped.
    func unlessStopped(_ report: () -> Void) {
        stopped.withLock { stopped in
            if !stopped { report() }
        }
    }

    /// Marks the run stopped, and runs `report`: nothing the task says after it changes the state.
    func stop(_ report: () -> Void) {
        stopped.withLock { stopped in
            stopped = true
            report()
        }
    }
}

/// Where the manager's events go: the `events` stream, or an observer called in place.
struct EventSink: Sendable {
    let stream: AsyncStream<ManagerEvent>.Continuation
    let batches: EventBacklog?
    let observer: (@Sendable (ManagerEvent) -> Void)?
    /// Events put in `stream` (or `batches`) so far, counted in their own order (under the lock, with the
    /// yield).
    let yielded = NIOLockedValueBox(0)

    func yield(_ event: ManagerEvent) {
        if let observer {
            observer(event)
        } else {
            yielded.withLockedValue { count in
                if let batches { batches.append(event) } else { stream.yield(event) }
                count += 1
            }
        }
    }

    func finish() {
        stream.finish()
        batches?.finish()
    }
}
