import FoundationEssentials
import Glibc
import HaulCore
import NIOConcurrencyHelpers

/// The shell around the pure core: one task that takes messages from every source in arrival order
/// (keys, resizes and signals from the screen's thread, the manager's events, clock ticks, loaded files),
/// runs `update`, carries out the effects, and hands a new frame to the screen when the state changed,
/// at most once per `frameInterval`. Every source yields into one stream, which `run` reads in a single
/// `for await`; each input is one `step` (message, `update`, effects), and the effects go to one
/// `EffectRunner`, which owns every task and handle they need.
///
/// A key or a resize is drawn at once. Anything else is drawn at once when the last frame is older than
/// the frame interval, else one delayed frame is scheduled for when it is due: a flood of progress events
/// costs at most 30 renders a second, and a key never waits for the next slot. With nothing happening,
/// nothing runs. Frame pacing, the delayed frame, the elapsed clock, the waits to connect again and the quit
/// timeout all read `clock`, the one the composition root (`FullScreen.run`) passes in.
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
        let first = Self.fitted(initial, to: info)
        await withTaskGroup(of: Void.self) { group in
            let effects = EffectRunner(self, sink: sink, observe: observe)
            var state = first
            effects.followEvents(in: &group)
            sink.yield(.message(.started(urls: urls)))
            effects.loadLimit(in: &group)
            effects.frames.draw(state)
            for await input in inputs {
                guard await step(input, &state, effects, in: &group) else { break }
            }
            effects.finish()
            group.cancelAll()
        }
        sink.finish()
        await screen.stop()
        if let number = stopSignal.withLockedValue({ $0 }) { return 128 + number }
        return await manager.exitCode
    }

    /// The state to start from on the terminal `info` describes.
    private static func fitted(_ initial: AppState, to info: ScreenInfo) -> AppState {
        var state = initial
        state.size = info.size
        state.colors = info.colors
        state.unicode = info.unicode
        state.pictureColors = pictureColors(info, drawing: state.pictureDrawing)
        return state
    }

    /// One input of the loop's stream: each message through `update`, its effects carried out in order, and
    /// a frame when what is shown changed. False when the loop is done (quitting is ready).
    private func step(_ input: Input, _ state: inout AppState, _ effects: EffectRunner,
                      in group: inout TaskGroup<Void>) async -> Bool {
        switch input {
        case .message(let message):
            let before = StateChange(state, message)
            for effect in update(&state, message) { await effects.perform(effect, state, in: &group) }
            // The list is sorted and filtered again once for what the message changed, not at each event.
            state.refreshListing()
            if before.changed(state) { effects.frames.show(state, userInput: message.isUserInput) }
        case .managerEvents(let events):
            var changed = false
            for event in events {
                let message = Message.manager(event)
                // Once one event of the batch changed what is shown, the rest need no comparison.
                let before = changed ? nil : StateChange(state, message)
                for effect in update(&state, message) { await effects.perform(effect, state, in: &group) }
                changed = changed || before?.changed(state) == true
            }
            state.refreshListing()
            if changed { effects.frames.show(state, userInput: false) }
        case .frame:
            effects.frames.frameDue(state)
        case .readyToQuit:
            return false
        }
        return true
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
