import FoundationEssentials
import Glibc
import HaulCore

/// What the full-screen interface needs from the command line.
package struct FullScreenOptions: Sendable {
    /// Downloads to start at once.
    var urls: [String]
    /// A SuperStorage-API server to browse in the files view (`--server`, or the demo server).
    var server: String?
    /// `-s`: connections per download; `m` uses it, or 4 when it is 1.
    var segments: Int
    /// Open the files view first (`--demo`, or `--server` without URLs).
    var startInFiles: Bool
    /// A job for `url` over `segments` connections, with the command line's other options.
    var makeJob: @Sendable (_ url: String, _ segments: Int) -> DownloadJob
    /// Tell the desktop (OSC 9 / 777) when a long download is done (`--no-notify` turns it off).
    package var notify = true
    /// How `v` draws pictures: an image protocol, symbols (24-bit colour where the terminal has it), or
    /// `none`, which turns `v` off.
    package var pictures = PictureMode.symbols
    /// The command line's transfer options (timeouts, CA certificates, proxy, credentials...): the files
    /// view's listing requests go out with them too.
    package var transfer = TransferOptions()
    /// The service, when the screen is attached to it: its events, and the way back to it after it went away.
    package var service: ServiceLink?
    /// A first line for the footer, until the first key (`--demo` says where its downloads are, and are not).
    package var notice: String?

    package init(urls: [String], server: String?, segments: Int, startInFiles: Bool,
                makeJob: @escaping @Sendable (_ url: String, _ segments: Int) -> DownloadJob) {
        self.urls = urls
        self.server = server
        self.segments = segments
        self.startInFiles = startInFiles
        self.makeJob = makeJob
    }
}

/// The full-screen ncurses interface: `haul` on a terminal.
package enum FullScreen {
    /// Whether both stdin and stdout are terminals.
    package static var isAvailable: Bool {
        isatty(0) == 1 && isatty(1) == 1
    }

    /// Takes over the terminal until the user quits, and returns the exit code over all downloads (128 +
    /// the signal after SIGINT, SIGTERM or SIGHUP: 130, 143, 129, once the downloads are paused and
    /// checkpointed). The terminal is restored on quit, on SIGINT/SIGTERM/SIGHUP, and on errors; throws
    /// `TerminalUnavailable` when curses cannot start (the caller may fall back to line output). `clock` is the
    /// one clock of the screen: its frame pacing, elapsed clock, waits to connect again and quit timeout.
    package static func run(_ options: FullScreenOptions, manager: any DownloadControl,
                            clock: some Clock<Duration> = ContinuousClock()) async throws -> Int32 {
        var state = AppState(size: Size(columns: 80, rows: 24))
        state.attached = manager.outlivesFrontEnd
        state.notify = options.notify
        state.pictures = options.pictures != .none
        state.pictureDrawing = PictureDrawing(mode: options.pictures, cell: CellPixels.of(terminal: 1) ?? .assumed,
                                              environment: ProcessInfo.processInfo.environment)
        state.files.server = options.server
        state.view = options.startInFiles ? .files : .downloads
        state.defaultSegments = max(1, options.segments)
        state.multiPartSegments = options.segments > 1 ? options.segments : 4
        state.message = options.notice
        let loop = AppLoop(manager: manager, service: options.service, screen: try NcursesTerminal(),
                           clock: clock, files: .curl(options.transfer), makeJob: options.makeJob)
        return try await loop.run(state, urls: options.urls)
    }
}
