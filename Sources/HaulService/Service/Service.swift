import Foundation
import HaulCore
import HaulServiceClient
import HaulTorrent

/// The per-user service: owns the `DownloadManager` (its queue, `-j`, the stored `Task` handles), keeps
/// the store and the roster from the manager's events, and serves the clients that attach.
///
/// Every command a client sends lands here; every event the manager tells goes, in order, to the store (at
/// once for a state change, at most once a second for progress), to the roster (what `ls` and a new client
/// see) and to every attached client.
actor Service {
    struct Configuration: Sendable {
        var directory: StateDirectory
        /// Downloads at once.
        var concurrency = 4
        /// With nothing queued or running and no client attached for this long, the service ends; nil: never
        /// (the aria2 face listens: a front end may come at any time).
        var idleExit: Duration? = .seconds(60)
        /// The aria2 JSON-RPC face, when on.
        var rpc: RPCConfiguration?
        /// `--schedule` and `--limit-schedule`: when the queue runs, and its cap at each time of day.
        var schedule = QueueSchedule()
        /// The local time of day of a date, in seconds since midnight (the system's time zone; a test's own).
        var localSecond: @Sendable (Date) -> Int = Service.localSecond
        /// `--on-queue-done`: run once each time nothing is left running or waiting.
        var onQueueDone: Hook?
        /// Keeps the machine awake while downloads run (logind's lock, where there is logind).
        var inhibitor: any SleepInhibitor = LogindInhibitor()
        /// The transfers' driver: the process's one. A test's service that caps the overall rate (the rate
        /// schedule) takes one of its own, or its cap would hold every other test's transfers in the process.
        var driver: CurlDriver = .shared
        /// The config file's categories (`[categories.NAME]`), read as the service started.
        var categories = CategoryRules()
        /// The torrents' session, started with the first torrent.
        var torrents = TorrentSessionOptions()
    }

    let configuration: Configuration
    let manager: DownloadManager
    /// The queue's torrents (`Downloader.torrents`): its session closes with the service.
    let torrentService: TorrentService
    /// The manager's events the pipeline has applied and stored (`ServiceRunner`): commands answer once it
    /// has caught up with them (`settled`).
    nonisolated let handled = EventProgress()
    private let store: Store
    var roster = Roster()
    /// The aria2 face's global options (`changeGlobalOption`).
    var aria2Globals = Aria2Globals()
    /// WebSocket sessions of the aria2 face: they get aria2's notifications.
    private var aria2Listeners: [Int: AsyncStream<JSON>.Continuation] = [:]
    /// Set once the aria2 face listens: its URL, for `status`.
    private(set) var rpcURL: String?

    func setRPCURL(_ url: String) {
        rpcURL = url
    }
    /// aria2's `getSessionInfo`: new for each service process.
    let sessionID = (0..<5).map { _ in GID.random() }.joined().prefix(40).description
    private var subscribers: [Int: EventBacklog] = [:]
    private var nextSubscriber = 0
    private var idleTimer: Task<Void, Never>?
    /// The schedule's timer and what it said, the queue's totals, what runs (`Service+Gates`).
    var gates = ServiceGates()
    /// Why the service ends.
    enum EndReason: Sendable, Equatable {
        /// `haul service stop`, SIGTERM or SIGINT: pause what runs first.
        case stopAsked
        /// Nothing queued or running and no client attached for `idleExit`.
        case idle
    }

    /// Resumed once, when the service should end.
    private var endWaiters: [CheckedContinuation<EndReason, Never>] = []
    private(set) var endReason: EndReason?
    /// Ids whose download the service itself paused to stop: stored as queued, so the next service continues them.
    var pausedToStop: [DownloadID] = []

    /// What the service times its records with (when a rate was measured), waits on (the idle exit) and dates
    /// what it stores with (`ServiceClock`).
    let clock: ServiceClock

    init(configuration: Configuration, store: Store, clock: ServiceClock = .system) {
        self.configuration = configuration
        self.store = store
        self.clock = clock
        // A download that does not fit waits for room, looked at again on the service's clock.
        var downloader = Downloader(driver: configuration.driver)
        downloader.categories = configuration.categories
        torrentService = TorrentService(options: configuration.torrents)
        downloader.torrents = torrentService
        manager = DownloadManager(downloader: downloader,
                                  concurrency: configuration.concurrency, batched: true,
                                  roomWatch: DownloadManager.RoomWatch(clock: clock.moments))
        aria2Globals.concurrency = configuration.concurrency
    }

    /// Every download's file takes its name only once the store holds its `started` (with its part's
    /// identity): a kill between the rename and the stored "done" then finds the file its own (`restore`).
    func holdNamesUntilStored() async {
        let handled = self.handled
        await manager.setNamingGate { count in await handled.wait(until: count) }
    }

    var attached: Int { subscribers.count }

    // MARK: start and end

    /// Loads the stored downloads: the finished ones as history, the queued and running ones queued again
    /// (they continue from their `.part`). A download whose credentials were withheld from the store cannot
    /// be continued by this process: it is marked failed, saying so.
    func restore() async throws(StoreError) -> [DownloadID] {
        var continued: [DownloadID] = []
        var lost: [ManagerEvent] = []
        var foundDone: [(DownloadID, DownloadResult)] = []
        let rows = try store.all()
        // Given to the manager once all are read, in the waiting queue's stored order (what ran when the
        // service stopped first): the first of them start at once.
        var restoring: [(job: DownloadJob, id: DownloadID, file: String, state: DownloadState, rank: Int64)] = []
        for found in rows {
            var stored = found
            var state = stored.state
            let job: DownloadJob
            do { job = try stored.job } catch {
                state = .failed(HaulError(.other, "its stored options are unreadable: \(error.message)"))
                roster.insert(entry(for: stored, job: nil, state: state))
                lost.append(.state(id: stored.id, state))
                // Known to the manager so that it can be removed; a retry fails at once (no name), writing nothing.
                restoring.append((DownloadJob(url: stored.url, outputDirectory: "/", outputName: ""), stored.id,
                                  stored.file, state, stored.queueRank))
                continue
            }
            var resumable = job
            // A resume continues the very file it had claimed, whatever the server calls it now.
            if let path = stored.path {
                resumable.outputName = FilePath.baseName(of: path)
                // And in the folder it had claimed it in: its category's (while the config still has it), or
                // the output directory when it had none.
                if resumable.category == nil {
                    switch stored.record.category {
                    case nil: resumable.category = CategoryRules.none
                    case let category? where configuration.categories.rule(named: category) != nil:
                        resumable.category = category
                    default: break
                    }
                }
            }
            if !state.isFinished, let path = stored.path, let part = stored.part, !FileIdentity.exists(path + ".part"),
                FileIdentity.same(FileIdentity.of(path), as: part)
            {
                // Killed between its rename and its "done": the file at its name is the one it wrote (same
                // device and inode as its part), whole (named only once synced). Done, not fetched again.
                state = .done
                let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? stored.completed
                stored.completed = size
                stored.total = stored.total ?? size
                stored.file = FilePath.baseName(of: path)
                let result = DownloadResult(file: stored.file, path: path, bytes: size, skipped: false)
                lost.append(.finished(id: stored.id, result, seconds: stored.seconds ?? 0))
                foundDone.append((stored.id, result))
                lost.append(.state(id: stored.id, .done))
            }
            if !state.isFinished && stored.secretsWithheld {
                state = .failed(HaulError(.authentication,
                                          "its credentials were not stored; add it again to continue"))
                lost.append(.state(id: stored.id, state))
            }
            roster.insert(entry(for: stored, job: resumable, state: state.isFinished ? state : .queued))
            if !state.isFinished { continued.append(stored.id) }
            restoring.append((resumable, stored.id, stored.file, state, stored.queueRank))
        }
        restoring.sort { ($0.rank, $0.id) < ($1.rank, $1.id) }
        roster.arrangeQueue(restoring.map(\.id))
        for download in restoring {
            await manager.restore(download.job, id: download.id, file: download.file, state: download.state)
        }
        if !lost.isEmpty { try store.apply(lost, at: clock.date()) }
        // Their hooks wait for a stored "done", which the killed service never wrote: they run now, once.
        for (id, result) in foundDone { await manager.runCompletionHook(id, result) }
        return continued
    }

    private func entry(for stored: StoredDownload, job: DownloadJob?, state: DownloadState) -> Roster.Entry {
        var record = stored.record
        record.state = state
        var entry = Roster.Entry(record, directory: job?.outputDirectory ?? ".",
                                 added: stored.added, gid: stored.gid)
        // Its own limit, as stored with the job: attached screens show it after a restart too.
        entry.limit = job?.transfer.maxReceiveRate
        entry.sources = job.map(Roster.sourceURLs(of:)) ?? []
        entry.following = job?.followedFrom
        return entry
    }

    /// Returns when the service should end, and why.
    func waitForEnd() async -> EndReason {
        if let endReason { return endReason }
        return await withCheckedContinuation { endWaiters.append($0) }
    }

    private func end(_ reason: EndReason) {
        guard endReason == nil else { return }
        endReason = reason
        idleTimer?.cancel()
        gates.timer?.cancel()
        configuration.inhibitor.release()
        for waiter in endWaiters { waiter.resume(returning: reason) }
        endWaiters = []
    }

    /// `haul service stop`, SIGTERM, SIGINT: the service is to end after pausing what runs.
    func requestStop() {
        end(.stopAsked)
    }

    /// Pauses what runs (each download takes its last checkpoint) and returns when every task has ended.
    /// What it paused is stored as queued afterwards (`stoppedDownloads`), so the next service continues it.
    func pauseForStop() async {
        pausedToStop = roster.order.filter { !(roster[$0]?.state.isFinished ?? true) }
        await manager.pauseAll()
        await manager.waitUntilIdle()
    }

    /// What `stop` paused, for the store once the events have drained.
    var stoppedDownloads: [DownloadID] { pausedToStop }

    /// Re-arms the idle timer: the service ends after `idleExit` with nothing queued or running and no
    /// client attached.
    private func checkIdle() {
        let idle = roster.active == 0 && subscribers.isEmpty
        if !idle {
            idleTimer?.cancel()
            idleTimer = nil
            return
        }
        guard idleTimer == nil, endReason == nil, let wait = configuration.idleExit else { return }
        let clock = clock
        idleTimer = Task { [weak self] in
            guard (try? await clock.sleep(for: wait)) != nil else { return }
            await self?.idleTimerFired()
        }
    }

    private func idleTimerFired() {
        idleTimer = nil
        if roster.active == 0 && subscribers.isEmpty { end(.idle) } else { checkIdle() }
    }

    // MARK: events

    /// Called with the manager's events, in order and in batches (whatever came while the last batch was
    /// applied), by the one task that reads them, before the store has them.
    func apply(_ events: [ManagerEvent]) {
        var stateChanged = false
        let now = clock.moment
        for event in events {
            let before: DownloadState? = if case .state(let id, _) = event { roster[id]?.state } else { nil }
            roster.apply(event, at: now)
            if !aria2Listeners.isEmpty, case .state(let id, let state) = event, let gid = roster[id]?.gid,
                let method = Aria2Status.notification(from: before, to: state)
            {
                let message = JSONRPC.notification(method, gid: gid)
                for listener in aria2Listeners.values { listener.yield(message) }
            }
            switch event {
            case .state, .removed: stateChanged = true
            default: break
            }
        }
        for (key, subscriber) in subscribers where !subscriber.append(contentsOf: events) {
            // A client that stopped reading (its backlog is full, and finished now): it is let go rather than
            // held in memory; it may attach again.
            subscribers[key] = nil
        }
        noteForGates(events)
        if stateChanged { checkIdle() }
    }

    /// A client attaches: the snapshot of every download, then the live events, until it goes
    /// (`unsubscribe`, or the service's end). `snapshot` says how many of the first events are the snapshot;
    /// room is kept for it and as many live events again.
    func subscribe() -> Subscription {
        let events = roster.snapshot()
        let backlog = EventBacklog(capacity: events.count + (1 << 16))
        backlog.append(contentsOf: events)
        let key = nextSubscriber
        nextSubscriber += 1
        subscribers[key] = backlog
        checkIdle()
        return Subscription(key: key, events: backlog, snapshot: events.count)
    }

    /// One attached client's stream: `events` in batches (whatever came while the last was being sent).
    struct Subscription: Sendable {
        let key: Int
        let events: EventBacklog
        let snapshot: Int
    }

    /// The client went: its stream ends, and it no longer counts as attached.
    func unsubscribe(_ subscription: Subscription) {
        subscription.events.finish()
        subscribers[subscription.key] = nil
        checkIdle()
    }

    /// A WebSocket session of the aria2 face: aria2's notifications (`aria2.onDownloadStart`...) as they
    /// happen. It does not keep the service from its idle exit (the face's listener does).
    func listenAria2() -> AsyncStream<JSON> {
        let (stream, continuation) = AsyncStream.makeStream(of: JSON.self, bufferingPolicy: .bufferingNewest(4096))
        let key = nextSubscriber
        nextSubscriber += 1
        aria2Listeners[key] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.stopListening(key) }
        }
        return stream
    }

    private func stopListening(_ key: Int) {
        aria2Listeners[key] = nil
    }

    /// Ends every client's stream (the service is going).
    func detachAll() {
        for subscriber in subscribers.values { subscriber.finish() }
        subscribers = [:]
        for listener in aria2Listeners.values { listener.finish() }
        aria2Listeners = [:]
    }

    // MARK: commands

    /// Stores each job, then queues it under the id the store gave it. `gids`: the GIDs an aria2 client
    /// chose (unique, checked by the caller), else random ones; `paused`: added paused; `metalink`: the
    /// metalink download whose files these are (a client's job never claims one itself).
    func add(_ jobs: [DownloadJob], gids given: [String]? = nil, paused: Bool = false,
             followedFrom metalink: DownloadID? = nil) async throws(StoreError) -> [Wire.Added]
    {
        let now = clock.date()
        let named = jobs.map { job in
            var job = job
            job.followedFrom = metalink
            return (job: job, file: job.plannedName)
        }
        var gids = given ?? []
        // Unique among themselves through a set: a search of the list for each was half a million string
        // comparisons for a 1000-line list (4 ms, on the way to the first download).
        var taken = Set(gids)
        while gids.count < jobs.count {
            let gid = GID.random()
            if roster.ids[gid] == nil, taken.insert(gid).inserted { gids.append(gid) }
        }
        // One transaction for the lot: a long `-i` list is stored whole or not at all.
        let ids = try store.insert(named, gids: gids, added: now)
        var added: [Wire.Added] = []
        added.reserveCapacity(ids.count)
        roster.reserve(ids.count)
        for (index, (id, (job, file))) in zip(ids, named).enumerated() {
            let record = DownloadRecord(id: id, url: URLRedaction.masked(job.url), name: file,
                                        state: paused ? .paused : .queued)
            var entry = Roster.Entry(record, directory: job.outputDirectory, added: now, gid: gids[index],
                                     announced: false)
            entry.sources = Roster.sourceURLs(of: job)
            entry.following = metalink
            roster.insert(entry)
            added.append(Wire.Added(id: id, file: file))
        }
        _ = await manager.add(named.map(\.job), ids: ids, paused: paused)
        // A start time: the timer wakes for it too (and one already past is let go now).
        if jobs.contains(where: { $0.startAfter != nil }) { await reviewSchedule() }
        checkIdle()
        return added
    }

    enum Verb: String, Sendable, CaseIterable {
        case pause, resume, cancel, retry, remove
    }

    /// Applies `verb` to the selected downloads. Unknown ids: nothing is done, and they are named.
    /// `remove` of one that is queued or running: refused, nothing is done.
    func perform(_ verb: Verb, on selection: Wire.Selection) async -> Result<[DownloadID], Wire.Failure> {
        let ids: [DownloadID]
        if selection.all == true {
            ids = roster.order
        } else {
            let asked = selection.ids ?? []
            let unknown = asked.filter { !roster.contains($0) }
            guard unknown.isEmpty else {
                let names = unknown.map(String.init).joined(separator: ", ")
                return .failure(Wire.Failure(error: "no download with id \(names)", unknown: unknown))
            }
            ids = asked
        }
        switch verb {
        case .pause:
            if selection.all == true { await manager.pauseAll() } else { for id in ids { await manager.pause(id) } }
        case .resume:
            // A paused download keeps its place in the waiting queue: it starts in its turn, not after the rest.
            if selection.all == true {
                await manager.resumeAll(inQueueOrder: roster.waiting)
            } else {
                for id in ids { await manager.resume(id) }
                await manager.reorderQueue(roster.waiting)
            }
        case .cancel:
            if selection.all == true { await manager.cancelAll() } else { for id in ids { await manager.cancel(id) } }
        case .retry:
            for id in ids { await manager.retry(id) }
        case .remove:
            // A download waiting for room has not started: it goes as a finished one does (its files stay).
            func removable(_ id: DownloadID) -> Bool {
                roster[id].map { $0.state.isFinished || $0.state.isWaitingForRoom } ?? true
            }
            let running = ids.filter { !removable($0) }
            if selection.all != true, !running.isEmpty {
                let names = running.map(String.init).joined(separator: ", ")
                return .failure(Wire.Failure(error: "download \(names) is queued or running; cancel it first"))
            }
            for id in ids where roster[id] != nil && removable(id) { await manager.remove(id) }
        }
        if selection.wait == true, verb == .pause || verb == .cancel {
            await manager.waitUntilStopped(ids)
        }
        await settled()
        return .success(ids)
    }

    /// Returns once every event the manager has made so far is in the roster and the store: what a command
    /// changed is what `ls` shows and what survives a `kill -9`, by the time it is acknowledged.
    func settled() async {
        await handled.wait(until: manager.eventsYielded)
    }

    func list() -> [Wire.Download] {
        roster.list(at: clock.moment)
    }

    func status(socket: String) -> Wire.Status {
        var status = Wire.Status(running: true, pid: getpid(), socket: socket, downloads: roster.count,
                                 active: roster.active, attached: subscribers.count, version: HaulVersion.string)
        if let rpcURL, let rpc = configuration.rpc {
            status.rpc = Wire.Status.RPC(url: rpcURL, secretFile: rpc.secretFile)
        }
        status.limit = limitInForce
        status.jobs = aria2Globals.concurrency
        status.store = store.writeProblem
        status.schedule = scheduleStatus
        return status
    }

    /// These downloads' own caps, at once (the manager tells every client, as a `.limited` fact).
    func setLimit(_ ids: [DownloadID], _ bytesPerSecond: Int64?) async -> Result<[DownloadID], Wire.Failure> {
        let unknown = ids.filter { !roster.contains($0) }
        guard unknown.isEmpty else {
            return .failure(Wire.Failure(error: "no download with id \(unknown.map(String.init).joined(separator: ", "))",
                                         unknown: unknown))
        }
        let limit = bytesPerSecond.flatMap { $0 > 0 ? $0 : nil }
        for id in ids { await manager.setReceiveLimit(id, limit) }
        await settled()
        return .success(ids)
    }

    /// Downloads at once, from now on: more start at once, and fewer let the extra ones end first.
    func setConcurrency(_ jobs: Int) async {
        aria2Globals.concurrency = jobs
        await manager.setConcurrency(jobs)
    }

    /// The overall receive cap, at once for what runs: the TUI's `+`/`-` and aria2's
    /// `max-overall-download-limit` are the same setting.
    func setOverallLimit(_ bytesPerSecond: Int64?) async {
        let limit = bytesPerSecond.flatMap { $0 > 0 ? $0 : nil }
        aria2Globals.overallLimit = limit
        // It holds until the schedule's next change.
        gates.scheduleCap = .none
        await manager.setOverallReceiveLimit(limit)
    }
}

extension Service {
    /// Stores the job of a download that changed while not running, so that a restarted service continues it
    /// as it is now (a refreshed address: the old one has expired). A failure to store it is the answer's.
    func keep(_ job: DownloadJob, of id: DownloadID) -> Wire.RefreshFailure? {
        do throws(StoreError) {
            try store.replaceJob(of: id, with: job)
            return nil
        } catch {
            return Wire.RefreshFailure(error: "cannot store the download's new address: \(error.message)",
                                       exitCode: FailureCategory.fileIO.exitCode)
        }
    }
}
