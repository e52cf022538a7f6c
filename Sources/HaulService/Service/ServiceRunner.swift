import Foundation
import HaulCore
import HaulServiceClient
import HaulTorrent
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// `haul service run`: takes the state directory's lock, opens the store, continues what was queued or
/// running, serves the control socket, and ends when asked to stop or idle for long enough.
package enum ServiceRunner {
    package struct Options: Sendable {
        var directory: StateDirectory
        package var concurrency = 4
        /// nil: the service never ends by itself (the default while the aria2 face listens).
        package var idleExit: Duration? = .seconds(60)
        /// The aria2 JSON-RPC face, when asked for.
        package var rpc: RPCConfiguration?
        /// A descriptor to write one byte to (then close) once the socket accepts connections: how the
        /// client that started the service knows it may connect.
        package var readyDescriptor: Int32?
        /// `--schedule`, `--limit-schedule`: when the queue runs, and its cap at each time of day.
        package var schedule = QueueSchedule()
        /// `--on-queue-done`.
        package var onQueueDone: Hook?
        /// The config file's categories: the folders of the downloads whose directory was not given.
        package var categories = CategoryRules()
        /// The torrents' session (started with the first torrent).
        package var torrents = TorrentSessionOptions()

        package init(directory: StateDirectory) {
            self.directory = directory
        }
    }

    /// Runs the service to its end; returns the exit code (0, or 1 with the reason on stderr).
    /// `stops` yields when a signal asks the service to stop.
    package static func run(_ options: Options, stops: AsyncStream<Void>) async -> Int32 {
        do {
            guard let lock = try ServiceLock.take(options.directory, preparing: true) else {
                log("haul service: \(options.directory.alreadyRunning.message)")
                // The client that started it waits for the one that holds the lock (`ServiceLauncher`).
                answer(ServiceLauncher.anotherRuns, to: options.readyDescriptor)
                return FailureCategory.other.exitCode
            }
            defer { withExtendedLifetime(lock) {} }
            try await serve(options, stops: stops)
            return 0
        } catch {
            log("haul service: \(error.message)")
            // The client that started it shows the reason itself.
            answer("!" + error.message, to: options.readyDescriptor)
            return FailureCategory.other.exitCode
        }
    }

    /// Writes the service's one answer on the descriptor of the client that started it, and closes it.
    private static func answer(_ text: String, to descriptor: Int32?) {
        guard let fd = descriptor else { return }
        let line = Array(text.utf8.prefix(4000))
        _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    static func log(_ line: String) {
        TextOutput.standard.err(line)
    }

    private static func serve(_ options: Options, stops: AsyncStream<Void>) async throws(HaulError) {
        let directory = options.directory
        // A stale socket (a killed service's) is replaced as the socket is bound; anything else at its path is
        // not ours to remove, and stops the start before the store is opened.
        if let what = directory.socketObstruction { throw directory.socketObstructed(by: what) }
        // The composition root of the service's time: its one clock, made here of the system's and handed down
        // to all that reads, waits on or dates with it (the store, the service, its faces, the store's writer).
        let clock = ServiceClock.system
        let store: Store
        do { store = try Store(directory: directory.path, clock: clock.moments) } catch {
            throw HaulError(.fileIO, error.message)
        }

        var configuration = Service.Configuration(directory: directory)
        configuration.concurrency = options.concurrency
        configuration.idleExit = options.idleExit
        configuration.rpc = options.rpc
        configuration.schedule = options.schedule
        configuration.onQueueDone = options.onQueueDone
        configuration.categories = options.categories
        configuration.torrents = options.torrents
        let service = Service(configuration: configuration, store: store, clock: clock)
        let socket = directory.socket
        // The socket this service bound: the one it removes as it ends, and no other.
        let bound = NIOLockedValueBox<StateDirectory.FileIdentity?>(nil)
        let (running, runningSink) = AsyncStream.makeStream(of: Bool.self)
        let (rpcRunning, rpcRunningSink) = AsyncStream.makeStream(of: Int?.self)
        let listening = ServiceApplications.Listening(
            control: {
                // The directory is 0700 already; the socket is 0600 too.
                bound.withLockedValue { $0 = directory.socketIdentity }
                runningSink.yield(chmod(socket, 0o600) == 0)
                runningSink.finish()
            },
            rpc: { port in
                rpcRunningSink.yield(port)
                rpcRunningSink.finish()
            })
        let quiet = Logger(label: "haul-service", factory: { _ in SwiftLogNoOpLogHandler() })
        // Built before the queue is restored: a certificate or a secret file that will not do stops the start
        // before a download continues.
        let applications = try ServiceApplications.build(service: service, listening: listening, logger: quiet)
        if applications.rpc == nil { rpcRunningSink.finish() }
        let recorder = Recorder(writer: StoreWriter(store: store, clock: clock.moments, now: clock.date))
        await service.holdNamesUntilStored()
        await service.followMetalinks()

        // The schedule and the start times first: a restored download waits for its window.
        await service.reviewSchedule()
        let continued: [DownloadID]
        do { continued = try await service.restore() } catch { throw HaulError(.fileIO, error.message) }

        let group = ServiceGroup(configuration: .init(
            services: applications.services, gracefulShutdownSignals: [], cancellationSignals: [], logger: quiet))
        await withTaskGroup(of: Void.self) { tasks in
            tasks.addTask(executorPreference: IOExecutor.shared) { await recordEvents(of: service, into: recorder) }
            tasks.addTask {
                do { try await group.run() } catch { log("haul service: a socket failed: \(error)") }
                runningSink.finish()
                rpcRunningSink.finish()
                await service.requestStop()
            }
            tasks.addTask {
                for await _ in stops { await service.requestStop() }
            }
            await announce(options, service: service, running: running, rpcRunning: rpcRunning,
                           continued: continued.count)
            await end(service, group: group, recorder: recorder)
            tasks.cancelAll()
        }
        if let mine = bound.withLockedValue({ $0 }), directory.socketIdentity == mine { unlink(socket) }
        do { try store.close() } catch { log("haul service: \(error.message)") }
    }

    /// The events, in order: the roster and the clients first (a Cancel All shows at once), then the store, in
    /// transactions of whatever came while the last one was written (`EventBacklog`), and while events keep
    /// coming, of what comes in the next 2 ms too (`StoreCommits`), in one task. An event is handled once both
    /// have it. Returns once the manager's events have ended (`finishEvents`) and the store holds them all.
    /// The store's writes block: run it on the I/O executor's threads (default actors run on the task's
    /// preferred executor), never on the two cooperative ones.
    static func recordEvents(of service: Service, into recorder: Recorder) async {
        await recordEvents(of: service, into: recorder, committingOn: service.clock)
    }

    /// The same with the group commit's wait on `clock`: a test that holds the service's clock still (to
    /// step a schedule) lets its store commit on the system's.
    static func recordEvents<C: Clock>(of service: Service, into recorder: Recorder, committingOn clock: C) async
        where C.Duration == Duration
    {
        guard let batches = service.manager.batches else { preconditionFailure("the service's manager batches its events") }
        await StoreCommits(backlog: batches, clock: clock).run(applying: { events in
            await service.apply(events)
        }) { events in
            await recorder.record(events)
            service.handled.advance(by: events.count)
        }
        await recorder.close()
        service.handled.finish()
    }

    /// Waits until the faces listen, then tells the client that started the service (`readyDescriptor`) and
    /// the log; when one cannot listen, says why to both and asks the service to stop.
    private static func announce(_ options: Options, service: Service, running: AsyncStream<Bool>,
                                 rpcRunning: AsyncStream<Int?>, continued: Int) async {
        let socket = options.directory.socket
        var listening = running.makeAsyncIterator()
        var rpcListening = rpcRunning.makeAsyncIterator()
        var rpcPort: Int?? = nil
        if let rpc = options.rpc {
            rpcPort = await rpcListening.next()
            if let port = rpcPort ?? nil {
                let host = rpc.host.contains(":") ? "[\(rpc.host)]" : rpc.host
                await service.setRPCURL("\(rpc.scheme)://\(host):\(port)/jsonrpc")
            }
        }
        if await listening.next() == true, options.rpc == nil || rpcPort != nil {
            if let fd = options.readyDescriptor {
                _ = write(fd, "1", 1)
                close(fd)
            }
            log("haul service: pid \(getpid()) listening on \(socket); \(continued) download(s) continued")
            if let url = await service.rpcURL {
                let plaintext = options.rpc?.certificateFile == nil && options.rpc?.allowRemote == true
                    && !RPCAddress.isLoopback(options.rpc?.host ?? "")
                log("haul service: aria2 JSON-RPC on \(url)" + (plaintext ? " (plaintext: reachable from other hosts)" : ""))
            }
        } else {
            var problem = "cannot listen on \(socket)"
            if let what = options.directory.socketObstruction { problem += ": \(what) is in the way (move it away)" }
            if let rpc = options.rpc, rpcPort == nil {
                problem = "cannot listen for aria2 JSON-RPC on \(rpc.host):\(rpc.port) (in use, or not an address of this host)"
            }
            log("haul service: \(problem)")
            if let fd = options.readyDescriptor {
                let line = Array(("!" + problem).utf8)
                _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                close(fd)
            }
            await service.requestStop()
        }
    }

    /// Waits for the service's end, then: pauses what runs when asked to stop, lets the clients go, closes the
    /// sockets, and returns once the store holds every event and what the stop paused is stored as queued.
    private static func end(_ service: Service, group: ServiceGroup, recorder: Recorder) async {
        let manager = service.manager
        let reason = await service.waitForEnd()
        if reason == .stopAsked { await service.pauseForStop() }
        // The torrents paused with the rest have their resume data saved: their session's peers are told.
        await service.torrentService.close()
        log("haul service: stopping (\(reason == .idle ? "idle" : "asked"))")
        await service.detachAll()
        await group.triggerGracefulShutdown()
        await manager.finishEvents()
        // The event task drains what the manager told, then closes the store.
        await recorder.waitUntilClosed()
        // Hooks start once the store holds their download's end: the last ones are released as the event
        // task ends, and start before the process does (they run on after it; none is waited for).
        await manager.waitForHookStarts()
        let stopped = await service.stoppedDownloads
        if !stopped.isEmpty { await recorder.markQueued(stopped) }
    }
}

/// Owns the store writer: records each event, flushes progress that waited a second, and says when it is
/// done. Writes errors to the log without stopping the service (a full disk: the queue already stored
/// stays as it is, and the next write tries again).
actor Recorder {
    private var writer: StoreWriter
    private var flushTimer: Task<Void, Never>?
    private var closed = false
    private var closeWaiters: [CheckedContinuation<Void, Never>] = []
    /// The last write's error, logged once.
    private var failure: String?

    init(writer: StoreWriter) {
        self.writer = writer
    }

    func record(_ events: [ManagerEvent]) {
        write { writer throws(StoreError) in try writer.record(events) }
        scheduleFlush()
    }

    /// One of the writer's transactions, which waits for its fsync: the I/O executor's thread does not count
    /// as running meanwhile. A failure is logged once, not at each retry (the writer keeps what it could not
    /// write pending), and the first write that goes through after it says so.
    private func write(_ transaction: (inout StoreWriter) throws(StoreError) -> Void) {
        do {
            try IOExecutor.blocking { () throws(StoreError) in try transaction(&writer) }
            if failure != nil {
                failure = nil
                ServiceRunner.log("haul service: \(Store.fileName) can be written again; what waited is stored")
            }
        } catch {
            if failure != error.message { ServiceRunner.log("haul service: \(error.message)") }
            failure = error.message
        }
    }

    /// A progress left pending is written a second later, and no timer runs while nothing is pending.
    private func scheduleFlush() {
        guard flushTimer == nil, writer.waiting, !closed else { return }
        let clock = writer.clock
        flushTimer = Task { [weak self] in
            guard (try? await clock.sleep(for: StoreWriter.progressInterval)) != nil else { return }
            await self?.flushDue()
        }
    }

    private func flushDue() {
        flushTimer = nil
        write { writer throws(StoreError) in try writer.flushDue() }
        scheduleFlush()
    }

    func close() {
        flushTimer?.cancel()
        flushTimer = nil
        write { writer throws(StoreError) in try writer.flush() }
        if writer.unwrittenCount > 0 {
            ServiceRunner.log("haul service: \(writer.unwrittenCount) change(s) to the queue could not be stored")
        }
        closed = true
        for waiter in closeWaiters { waiter.resume() }
        closeWaiters = []
    }

    func waitUntilClosed() async {
        if closed { return }
        await withCheckedContinuation { closeWaiters.append($0) }
    }

    /// Downloads the service paused to stop: stored as queued, for the next service to continue.
    func markQueued(_ ids: [DownloadID]) {
        do { try writer.store.apply(ids.map { .state(id: $0, .queued) }, at: writer.now()) } catch {
            ServiceRunner.log("haul service: \(error.message)")
        }
    }
}
