import CLinux
import CNcurses
import FoundationEssentials
import Glibc
import HaulCore
import NIOConcurrencyHelpers

/// The only code that calls curses, all of it on one thread of its own.
///
/// The thread sleeps in `poll(2)` on two descriptors: stdin (keys) and a self-pipe. Other threads write a
/// byte to the pipe to wake it: `R` a new frame is waiting (`show`), `Q` stop; the signal handlers of
/// `TerminalSignals` write `W` (resize), `I` and `T` (quit). Nothing happens while nobody writes and
/// no key comes: no timeouts, no polling loop.
///
/// Frames are diffed against the last one drawn, so only changed cells reach curses, which in turn sends
/// only what changed to the terminal.
final class NcursesTerminal: Screen {
    private struct Shared {
        var frame: Grid?
        var notices: [String] = []
        var started = false
    }

    private let shared = NIOLockedValueBox(Shared())
    private let pipe: (read: Int32, write: Int32)
    private let finished = Latch()

    /// Fails when the wake pipe cannot be made.
    init() throws {
        var fds: [Int32] = [-1, -1]
        guard Glibc.pipe(&fds) == 0 else { throw TerminalUnavailable("cannot create a pipe") }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        pipe = (fds[0], fds[1])
    }

    deinit {
        close(pipe.read)
        close(pipe.write)
    }

    func start(events: @escaping @Sendable (TerminalEvent) -> Void) async throws -> ScreenInfo {
        let alreadyStarted = shared.withLockedValue { state in
            defer { state.started = true }
            return state.started
        }
        precondition(!alreadyStarted, "an NcursesTerminal starts once")
        let pipe = self.pipe
        return try await withCheckedThrowingContinuation { continuation in
            detachEssentialThread { [self] in
                haul_name_thread("haul-curses")
                let session: CursesSession
                do {
                    session = try CursesSession(wakeFD: pipe.write)
                } catch {
                    continuation.resume(throwing: error)
                    markFinished()
                    return
                }
                continuation.resume(returning: session.info)
                session.run(wakeFD: pipe.read, events: events, takeFrame: { [self] in
                    shared.withLockedValue { state in
                        defer { state.frame = nil }
                        return state.frame
                    }
                }, takeNotices: { [self] in
                    shared.withLockedValue { state in
                        defer { state.notices = [] }
                        return state.notices
                    }
                })
                session.end()
                markFinished()
            }
        }
    }

    func show(_ grid: Grid) {
        shared.withLockedValue { $0.frame = grid }
        wake("R")
    }

    func notify(_ text: String) {
        shared.withLockedValue { $0.notices.append(text) }
        wake("N")
    }

    func stop() async {
        guard shared.withLockedValue(\.started) else { return }
        wake("Q")
        await finished.wait()
    }

    private func wake(_ byte: Character) {
        var value = byte.asciiValue!
        _ = write(pipe.write, &value, 1)
    }

    private func markFinished() {
        finished.open()
    }
}

/// The terminal could not be taken over (not a terminal, unknown TERM, no pipe).
struct TerminalUnavailable: Error, CustomStringConvertible, Sendable {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

/// Curses itself, from `newterm` to `endwin`: lives and is used only on the terminal thread.
private final class CursesSession {
    let info: ScreenInfo
    private let screen: OpaquePointer
    private let window: UnsafeMutablePointer<WINDOW>
    private var drawn: Grid?
    /// The picture the terminal last drew itself (`Grid.image`), still on the screen.
    private var drawnImage: PlacedImage?
    private var pairs: [ColorKey: Int16] = [:]
    private let defaultColors: Bool
    private var ended = false

    private struct ColorKey: Hashable {
        var foreground: Int16
        var background: Int16
    }

    init(wakeFD: Int32) throws {
        // ncurses is loaded here, when the screen starts: where it cannot be, the screen falls back to lines.
        if let failure = LoadedLibrary.failure(haul_ncurses_load) { throw TerminalUnavailable(failure) }
        setlocale(LC_ALL, "")
        let unicode = haul_locale_is_utf8() != 0
        TerminalSignals.install(wakeFD: wakeFD)
        guard let screen = newterm(nil, haul_stdout(), haul_stdin()) else {
            TerminalSignals.uninstall()
            throw TerminalUnavailable("cannot start curses for TERM=\(ProcessInfo.processInfo.environment["TERM"] ?? "")")
        }
        self.screen = screen
        _ = set_term(screen)
        guard let window = haul_stdscr() else {
            delscreen(screen)
            TerminalSignals.uninstall()
            throw TerminalUnavailable("curses has no screen")
        }
        self.window = window
        _ = cbreak()
        _ = noecho()
        _ = nonl()
        _ = intrflush(window, false)
        _ = keypad(window, true)
        _ = nodelay(window, true)
        _ = leaveok(window, true)
        _ = curs_set(0)
        _ = set_escdelay(25)
        var colors = false
        var defaults = false
        // NO_COLOR (no-color.org), set and not empty: bold and reverse only.
        let noColor = !(getenv("NO_COLOR").map { String(cString: $0) } ?? "").isEmpty
        if !noColor, has_colors(), start_color() == OK {
            colors = true
            defaults = use_default_colors() == OK
        }
        defaultColors = defaults
        info = ScreenInfo(size: Size(columns: Int(haul_getmaxx(window)), rows: Int(haul_getmaxy(window))),
                          colors: colors, unicode: unicode, colorCount: colors ? Int(haul_colors()) : 0)
    }

    /// A desktop notification through the terminal, between frames (on this thread, so it never splits one):
    /// OSC 777 for the terminals that take that form (foot, urxvt), OSC 9 for the others (iTerm2, WezTerm,
    /// Windows Terminal, ghostty, kitty); inside tmux wrapped for its passthrough (dropped unless allowed).
    private func notify(_ text: String) {
        let clean = String(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.prefix(200))
        let term = ProcessInfo.processInfo.environment["TERM"] ?? ""
        var sequence = term.hasPrefix("foot") || term.hasPrefix("rxvt")
            ? "\u{1b}]777;notify;haul;\(clean.replacing(";", with: ","))\u{7}"
            : "\u{1b}]9;\(clean)\u{7}"
        if ProcessInfo.processInfo.environment["TMUX"] != nil {
            sequence = "\u{1b}Ptmux;" + sequence.replacing("\u{1b}", with: "\u{1b}\u{1b}") + "\u{1b}\\"
        }
        let bytes = Array(sequence.utf8)
        _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
    }

    /// The thread's loop: sleeps in poll until a key, a frame or a signal.
    func run(wakeFD: Int32, events: @Sendable (TerminalEvent) -> Void, takeFrame: () -> Grid?,
             takeNotices: () -> [String]) {
        var fds = [pollfd(fd: 0, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
        var idleWakes = 0
        while true {
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                events(.interrupt)
                return
            }
            if fds[1].revents & Int16(POLLIN) != 0 {
                var stop = false
                var redraw = false
                for byte in drain(wakeFD) {
                    switch byte {
                    case UInt8(ascii: "Q"): stop = true
                    case UInt8(ascii: "R"): redraw = true
                    case UInt8(ascii: "N"): for text in takeNotices() { notify(text) }
                    case UInt8(ascii: "W"):
                        resize(events)
                        redraw = true
                    case UInt8(ascii: "I"): events(.signal(SIGINT))
                    case UInt8(ascii: "T"): events(.signal(SIGTERM))
                    case UInt8(ascii: "H"): events(.signal(SIGHUP))
                    default: break
                    }
                }
                if stop { return }
                if redraw, let frame = takeFrame() { draw(frame) }
            }
            let input = fds[0].revents
            if input & Int16(POLLIN) != 0 {
                let keys = readKeys()
                for key in keys { events(.key(key)) }
                // A readable stdin that yields nothing, again and again, is at end of file.
                idleWakes = keys.isEmpty ? idleWakes + 1 : 0
                if idleWakes > 50 {
                    events(.interrupt)
                    fds[0].fd = -1
                }
            } else if input & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 {
                events(.interrupt)
                fds[0].fd = -1  // poll ignores negative descriptors
            }
        }
    }

    func end() {
        guard !ended else { return }
        ended = true
        if drawnImage?.image.mode == .kitty { writeToTerminal(TerminalImage.deleteKittyImages) }
        _ = curs_set(1)
        _ = endwin()
        delscreen(screen)
        TerminalSignals.uninstall()
    }

    private func drain(_ fd: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        return bytes
    }

    private func resize(_ events: @Sendable (TerminalEvent) -> Void) {
        var rows: Int32 = 0
        var columns: Int32 = 0
        guard haul_window_size(1, &rows, &columns) == 0 || haul_window_size(0, &rows, &columns) == 0 else { return }
        _ = resizeterm(rows, columns)
        _ = readKeys()  // resizeterm queues a KEY_RESIZE; it says nothing new
        drawn = nil
        _ = wclear(window)
        events(.resize(Size(columns: Int(columns), rows: Int(rows))))
    }

    private func readKeys() -> [Key] {
        var keys: [Key] = []
        var code: wint_t = 0
        while true {
            let result = wget_wch(window, &code)
            if result == ERR { break }
            if let key = result == KEY_CODE_YES ? Self.functionKey(Int32(code)) : Self.characterKey(code) {
                keys.append(key)
            }
        }
        return keys
    }

    private static func functionKey(_ code: Int32) -> Key? {
        switch code {
        case KEY_UP: .up
        case KEY_DOWN: .down
        case KEY_LEFT: .left
        case KEY_RIGHT: .right
        case KEY_PPAGE: .pageUp
        case KEY_NPAGE: .pageDown
        case KEY_HOME: .home
        case KEY_END: .end
        case KEY_ENTER: .enter
        case KEY_BACKSPACE: .backspace
        case KEY_DC: .delete
        case KEY_BTAB: .backTab
        default: nil
        }
    }

    private static func characterKey(_ code: wint_t) -> Key? {
        switch code {
        case 9: return .tab
        case 10, 13: return .enter
        case 27: return .escape
        case 8, 127: return .backspace
        case 3: return .interrupt
        case 0..<32: return nil
        default: return Unicode.Scalar(UInt32(code)).map { .character(Character($0)) }
        }
    }

    // MARK: drawing

    private func draw(_ grid: Grid) {
        let rows = Int(haul_getmaxy(window))
        let columns = Int(haul_getmaxx(window))
        if let old = drawnImage, old != grid.image {
            // A picture the terminal drew itself goes first: a kitty image by deleting it; anything else by
            // drawing every cell again, since curses believes the cells under it blank and would skip them
            // (not when the next picture covers exactly the same cells: it replaces this one whole).
            let sameCells = grid.image.map {
                ($0.x, $0.y, $0.image.columns, $0.image.rows) == (old.x, old.y, old.image.columns, old.image.rows)
            } ?? false
            if old.image.mode == .kitty {
                writeToTerminal(TerminalImage.deleteKittyImages)
            } else if !sameCells || grid.image?.image.mode != old.image.mode {
                drawn = nil
                _ = wclear(window)
            }
        }
        let previous = drawn?.size == grid.size ? drawn : nil
        if previous == nil { _ = werase(window) }
        for y in 0..<min(rows, grid.height) {
            for x in 0..<min(columns, grid.width) {
                let cell = grid[x, y]
                if cell.isContinuation { continue }
                if let previous, previous[x, y] == cell,
                    cell.width == 1 || x + 1 >= grid.width || previous[x + 1, y] == grid[x + 1, y]
                {
                    continue
                }
                put(cell, x: x, y: y, columns: columns)
            }
        }
        drawn = grid
        _ = wnoutrefresh(window)
        _ = doupdate()
        // After curses: its frame is out, and the picture goes over the blank cells it left.
        if let image = grid.image, image != drawnImage || previous == nil,
            image.x + image.image.columns <= columns, image.y + image.image.rows <= rows
        {
            draw(image)
        }
        drawnImage = grid.image
    }

    /// Writes a picture the terminal draws itself at its cells, between a save and a restore of the cursor
    /// (DECSC/DECRC: its place and attributes), so curses' idea of the terminal stays true.
    private func draw(_ placed: PlacedImage) {
        var bytes = Array("\u{1b}7".utf8)
        // One kitty image at a time: a redraw after a clear or resize must not leave another beneath.
        if placed.image.mode == .kitty { bytes += TerminalImage.deleteKittyImages }
        for (row, line) in placed.image.lines.enumerated() {
            bytes += Array("\u{1b}[\(placed.y + row + 1);\(placed.x + 1)H".utf8)
            bytes += line
        }
        bytes += Array("\u{1b}8".utf8)
        writeToTerminal(bytes)
    }

    /// Bytes straight to the terminal, after what curses wrote (`doupdate` flushed it).
    private func writeToTerminal(_ bytes: [UInt8]) {
        _ = try? FileIO.writeAll(1, bytes)
    }

    private func put(_ cell: Cell, x: Int, y: Int, columns: Int) {
        var scalars = Array(cell.text.unicodeScalars.prefix(5).map { wchar_t(bitPattern: $0.value) })
        // Draw what the C library agrees about: a character whose width it sees otherwise, or any non-ASCII
        // one in a non-UTF-8 locale, becomes `?` in each of its columns, so the layout never shifts.
        let expected = Int(cell.width)
        let agreed = scalars.first.map { info.unicode || $0 < 128 ? Int(haul_wcwidth($0)) == expected : false } ?? false
        let (attributes, pair) = style(cell.style)
        if !agreed || (expected == 2 && x + 1 >= columns) {
            for offset in 0..<expected where x + offset < columns {
                var fallback: [wchar_t] = [wchar_t(UInt8(ascii: "?")), 0]
                _ = haul_put_cell(window, Int32(y), Int32(x + offset), &fallback, attributes, Int32(pair))
            }
            return
        }
        scalars.append(0)
        _ = haul_put_cell(window, Int32(y), Int32(x), &scalars, attributes, Int32(pair))
    }

    private func style(_ style: Style) -> (attr_t, Int16) {
        var attributes = haul_a_normal()
        if style.bold { attributes |= haul_a_bold() }
        if style.reverse { attributes |= haul_a_reverse() }
        if style.dim { attributes |= haul_a_dim() }
        guard info.colors, style.foreground != nil || style.background != nil else { return (attributes, 0) }
        // Pairs are keyed by curses colour numbers: many picture colours share the same nearest one.
        let count = info.colorCount
        let foreground = style.foreground.map { ColorMapping.number($0, colors: count) }
            ?? (defaultColors ? -1 : Int16(COLOR_WHITE))
        let background = style.background.map { ColorMapping.number($0, colors: count) }
            ?? (defaultColors ? -1 : Int16(COLOR_BLACK))
        let key = ColorKey(foreground: foreground, background: background)
        if let pair = pairs[key] { return (attributes, pair) }
        let next = pairs.count + 1
        guard next < min(Int(haul_color_pairs()), Int(Int16.max)) else { return (attributes, 0) }
        let number = Int16(next)
        _ = init_pair(number, foreground, background)
        pairs[key] = number
        return (attributes, number)
    }
}
