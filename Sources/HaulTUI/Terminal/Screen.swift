/// What the terminal tells the app loop, from the terminal's own thread.
enum TerminalEvent: Sendable, Equatable {
    case key(Key)
    case resize(Size)
    /// The terminal closed, or Ctrl-C arrived as a key: quit now, pausing downloads.
    case interrupt
    /// SIGINT, SIGTERM or SIGHUP: quit as for `interrupt`, then exit with 128 + the signal.
    case signal(Int32)
}

/// What the terminal can do, found when it is taken over.
struct ScreenInfo: Sendable, Equatable {
    var size: Size
    var colors: Bool
    var unicode: Bool
    /// How many colours curses reports (0 without colour).
    var colorCount = 8
}

/// The full screen as the app loop uses it. `NcursesTerminal` is the real one; tests use a recording fake.
protocol Screen: Sendable {
    /// Takes over the terminal. `events` is called on the screen's thread for every key, resize and signal.
    func start(events: @escaping @Sendable (TerminalEvent) -> Void) async throws -> ScreenInfo
    /// Draws `grid` as soon as the screen's thread gets to it; a newer grid replaces one not yet drawn.
    func show(_ grid: Grid)
    /// A desktop notification through the terminal (OSC 9 / OSC 777), written between frames.
    func notify(_ text: String)
    /// Restores the terminal (idempotent) and returns once it is restored.
    func stop() async
}
