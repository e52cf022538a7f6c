import FoundationEssentials
import Glibc
import HaulCore
import NIOConcurrencyHelpers

/// The shell around the pure core: one task that takes messages from every source in arrival order
/// (keys, resizes and signals from the screen's thread, the manager's events, clock ticks, loaded files),
/// runs `update`, carries out the effects, and hands a new frame to the screen when the state changed,
/// at most once per `frameInterval`.
///
/// A key or a resize is drawn at once. Anything else is drawn at once when the last frame is older than
/// the frame interval, else one delayed frame is scheduled for when it is due: a flood of progress events
/// costs at most 30 renders a second, and a key never waits for the next slot. With nothing happening,
/// nothing runs. Frame pacing, the delayed frame, the elapsed clock and the quit timeout all read `clock`.
final class AppLoop<C: Clock>: Sendable where C.Duration == Duration {
    /// What the loop's stream carries: messages for `update`, and its own bookkeeping.
    enum Input: Sendable {
        case message(Message)
        /// The manager's events that came together: each goes through `update` in order, and what they
        /// changed is drawn once.
        case managerEvents([ManagerEvent])
        /// The delayed frame is due.
        case frame
        /// Quitting: downloads are paused (or the wait for them gave up).
        case readyToQuit
    }

    let manager: any DownloadControl
    /// The service the manager's requests go to, when attached: its events come from here, and after it went
    /// away the loop connects again (nil: the downloads run in this process).
    let service: ServiceLink?
    let screen: any Screen
    let clock: C
    let files: FilesClient
    let makeJob: @Sendable (_ url: String, _ segments: Int) -> DownloadJob
    /// The least time between two frames (.zero: no cap).
    let frameInterval: Duration
    /// How long quitting waits for paused downloads to save their state.
    let quitTimeout: Duration

    init(manager: any DownloadControl, service: ServiceLink? = nil, screen: any Screen, clock: C,
         files: FilesClient = .curl, frameInterval: Duration = .seconds(1) / 30, quitTimeout: Duration = .seconds(5),
         makeJob: @escaping @Sendable (_ url: String, _ segments: Int) -> DownloadJob) {
        self.manager = manager
        self.service = service
        self.screen = screen
        self.clock = clock
        self.files = files
        self.makeJob = makeJob
        self.frameInterval = frameInterval
        self.quitTimeout = quitTimeout
    }

    /// Runs until the user quits; returns the exit code over all downloads, or 128 + the signal when
    /// SIGINT, SIGTERM or SIGHUP ended it (after the same pause and checkpoint as a quit). The terminal is
    /// restored before it returns, also when it could not be set up (then it throws).
    func run(_ initial: AppState, urls: [String], observe: (@Sendable (AppState) -> Void)? = nil) async throws -> Int32 {
        let (inputs, sink) = AsyncStream<Input>.makeStream()
        // The first stop signal; a later one quits no differently.
        let stopSignal = NIOLockedValueBox<Int32?>(nil)
        let info = try await screen.start { event in
            switch event {
            case .key(let key): sink.yield(.message(.key(key)))
            case .resize(let size): sink.yield(.message(.resize(size)))
            case .interrupt: sink.yield(.message(.interrupt))
            case .signal(let number):
                stopSignal.withLockedValue { $0 = $0 ?? number }
                sink.yield(.message(.interrupt))
            }
        }
        var state = initial
        state.size = info.size
        state.colors = info.colors
        state.unicode = info.unicode
        state.pictureColors = Self.pictureColors(info, drawing: state.pictureDrawing)
        let ticker = ClockTicker(clock: clock) { sink.yield(.message(.tick)) }
        let manager = self.manager
        let files = self.files
        let clock = self.clock

        let service = self.service

        await withTaskGroup(of: Void.self) { group in
            var frames = FramePacer<C.Instant>(interval: frameInterval)
            var delayedFrame: Task<Void, Never>?
            var waitForIdle: Task<Void, Never>?
            // The service's events, or the wait to connect to it again and the attempt. Unstructured, as
            // `waitForIdle`: a start of the service under way cannot be cancelled, and `q` must not wait for it.
            var link: Task<Void, Never>?
            defer {
                delayedFrame?.cancel()
                waitForIdle?.cancel()
                link?.cancel()
            }
            if let service {
                link = Task { await Self.follow(service, clock: clock, sink: sink) }
            } else {
                group.addTask {
                    for await events in manager.eventBatches() { sink.yield(.managerEvents(events)) }
                }
            }

            func draw() {
                screen.show(render(state, size: state.size))
                frames.drew(at: clock.now)
                observe?(state)
            }

            func perform(_ effect: Effect) async {
                switch effect {
                case .download(let urls, let segments): await manager.submit(urls.map { makeJob($0, segments) })
                case .cancel(let id): await manager.cancel(id)
                case .cancelAll: await manager.cancelAll()
                case .pause(let id): await manager.pause(id)
                case .resume(let id): await manager.resume(id)
                case .pauseAll: await manager.pauseAll()
                case .resumeAll: await manager.resumeAll()
                case .retry(let id): await manager.retry(id)
                case .remove(let id): await manager.remove(id)
                case .setOverallLimit(let limit): await manager.setOverallLimit(limit)
                case .setLimit(let id, let limit): await manager.setLimit(id, limit)
                case .open(let path):
                    if let problem = Opener.open(path) { sink.yield(.message(.notice(problem))) }
                case .notify(let text): screen.notify(text)
                case .reconnect(let delay):
                    guard let service else { return }
                    link?.cancel()
                    link = Task {
                        guard (try? await clock.sleep(for: delay)) != nil else { return }
                        do throws(HaulError) {
                            try await service.connect()
                        } catch {
                            if !Task.isCancelled { sink.yield(.message(.service(.failed(error.message)))) }
                            return
                        }
                        guard !Task.isCancelled else { return }
                        sink.yield(.message(.service(.connected)))
                        await Self.follow(service, clock: clock, sink: sink)
                    }
                case .loadLimit:
                    let control = manager
                    group.addTask { sink.yield(.message(.limitLoaded(await control.overallLimit))) }
                case .startClock: ticker.start()
                case .stopClock: ticker.stop()
                case .loadFiles:
                    guard let server = state.files.server else { return }
                    group.addTask {
                        async let status = files.status(server: server)
                        sink.yield(.message(.filesLoaded(await files.list(server: server))))
                        if let line = await status { sink.yield(.message(.statusLoaded(line))) }
                    }
                case .showPicture(let path):
                    // Decoding a large photo takes a moment: off the loop, as a child task.
                    let area = PictureOverlay.area(in: state.size)
                    let capability = state.pictureColors
                    var drawing = state.pictureDrawing
                    // The font may have changed since (a zoom is a resize too).
                    if drawing.mode != nil, let cell = CellPixels.of(terminal: 1) { drawing.cell = cell }
                    group.addTask {
                        let cells = PictureView.render(path: path, width: area.width, height: area.height,
                                                       capability: capability, drawing: drawing)
                        sink.yield(.message(.pictureLoaded(path: path, cells)))
                    }
                case .describePicture(let id, let path):
                    group.addTask {
                        sink.yield(.message(.pictureDescribed(id, PictureView.describe(path: path))))
                    }
                case .quit(let pausing):
                    ticker.stop()
                    draw()
                    if pausing { await manager.pauseAll() }
                    // Unstructured: waitUntilIdle cannot be cancelled, and quitting must not hang on it.
                    waitForIdle = Task {
                        await manager.waitUntilIdle()
                        sink.yield(.readyToQuit)
                    }
                    let timeout = quitTimeout
                    group.addTask {
                        try? await clock.sleep(for: timeout)
                        sink.yield(.readyToQuit)
                    }
                }
            }

            sink.yield(.message(.started(urls: urls)))
            let control = manager
            group.addTask { sink.yield(.message(.limitLoaded(await control.overallLimit))) }
            draw()
            // A change to show: at once for what the user did, else within the frame cap.
            func show(userInput: Bool) {
                let now = clock.now
                if userInput || frames.canDraw(at: now) {
                    // What the user did shows at once; the cap is for the flow of progress events.
                    delayedFrame?.cancel()
                    delayedFrame = nil
                    draw()
                } else if delayedFrame == nil {
                    let due = frames.nextFrame(after: now)
                    delayedFrame = Task {
                        // Cancelled: a frame was drawn meanwhile, and this one is not due any more.
                        guard (try? await clock.sleep(until: due, tolerance: nil)) != nil else { return }
                        sink.yield(.frame)
                    }
                }
            }

            for await input in inputs {
                switch input {
                case .message(let message):
                    let before = StateChange(state, message)
                    for effect in update(&state, message) { await perform(effect) }
                    if before.changed(state) { show(userInput: message.isUserInput) }
                case .managerEvents(let events):
                    var changed = false
                    for event in events {
                        let message = Message.manager(event)
                        // Once one event of the batch changed what is shown, the rest need no comparison.
                        let before = changed ? nil : StateChange(state, message)
                        for effect in update(&state, message) { await perform(effect) }
                        changed = changed || before?.changed(state) == true
                    }
                    if changed { show(userInput: false) }
                case .frame:
                    delayedFrame = nil
                    draw()
                case .readyToQuit:
                    break
                }
                if case .readyToQuit = input { break }
            }
            ticker.stop()
            group.cancelAll()
        }
        sink.finish()
        await screen.stop()
        if let number = stopSignal.withLockedValue({ $0 }) { return 128 + number }
        return await manager.exitCode
    }

    /// Feeds the service's events to the loop, from its snapshot on, and says when they end (unless the loop
    /// is leaving): the service stopped or went away, after a connection that lasted this long.
    private static func follow(_ service: ServiceLink, clock: C, sink: AsyncStream<Input>.Continuation) async {
        let since = clock.now
        for await part in service.events() {
            switch part {
            case .events(let events): sink.yield(.managerEvents(events))
            case .live: sink.yield(.message(.service(.live)))
            }
        }
        guard !Task.isCancelled else { return }
        sink.yield(.message(.service(.lost(after: since.duration(to: clock.now)))))
    }

    /// Pictures use what the terminal draws well: 24-bit colour when it has it (`COLORTERM`) and pictures are
    /// drawn with the terminal's own sequences (curses has no such colours), else the 256-colour palette
    /// through curses, and on a terminal with fewer colours shades.
    static func pictureColors(_ info: ScreenInfo, drawing: PictureDrawing,
                              environment: [String: String] = ProcessInfo.processInfo.environment) -> ColorCapability {
        guard info.colors else { return .shades }
        switch ColorCapability.detect(colors: info.colorCount, environment: environment) {
        case .trueColor where drawing.mode != nil: return .trueColor
        case .trueColor, .palette256: return info.colorCount >= 256 ? .palette256 : .shades
        case .shades: return .shades
        }
    }
}

extension Message {
    /// A key or a resize: the user is waiting to see it.
    var isUserInput: Bool {
        switch self {
        case .key, .resize: true
        default: false
        }
    }
}

/// When the next frame may be drawn: at most one per `interval`, on the loop's clock.
struct FramePacer<Instant: InstantProtocol> where Instant.Duration == Duration {
    let interval: Duration
    private(set) var lastFrame: Instant?

    init(interval: Duration) {
        self.interval = interval
    }

    func canDraw(at now: Instant) -> Bool {
        lastFrame.map { $0.duration(to: now) >= interval } ?? true
    }

    /// When the frame after the last one is due (`now` when none was drawn yet).
    func nextFrame(after now: Instant) -> Instant {
        lastFrame.map { $0.advanced(by: interval) } ?? now
    }

    mutating func drew(at now: Instant) {
        lastFrame = now
    }
}

/// Whether `update` changed the state, told without holding a copy of every row while it runs. A manager
/// event changes at most its own download's row, the number of rows (added, removed) and the fields beside
/// the rows (`UpdateTests/aManagerEventChangesOnlyItsOwnRow`): those are what is kept and compared. Any other
/// message (keys, the clock's tick, loaded files: a person's pace) compares the whole state. A copy of the
/// whole state per event made `update`'s write to one row copy all of them, and the comparison walk them
/// all: with 2000 downloads the screen took 3 s of CPU for what the service took 3 s to download.
struct StateChange {
    private enum Kept {
        case whole(AppState)
        case manager(rest: AppState, rowCount: Int, row: (index: Int, value: DownloadRow)?)
    }
    private let kept: Kept

    init(_ state: AppState, _ message: Message) {
        guard case .manager(let event) = message else {
            kept = .whole(state)
            return
        }
        let row = state.index(of: event.downloadID).map { ($0, state.rows[$0]) }
        kept = .manager(rest: state.withoutRows, rowCount: state.rows.count, row: row)
    }

    func changed(_ state: AppState) -> Bool {
        switch kept {
        case .whole(let before):
            return state != before
        case .manager(let rest, let rowCount, let row):
            if state.rows.count != rowCount { return true }
            if let row, state.rows[row.index] != row.value { return true }
            return state.withoutRows != rest
        }
    }
}
