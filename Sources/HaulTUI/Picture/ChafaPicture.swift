import CChafa
import Glibc
import HaulCore

/// How pictures reach the terminal (`--pictures`): an image protocol (kitty, sixel, iTerm2), coloured symbols,
/// or not at all.
package enum PictureMode: String, Sendable, CaseIterable, Codable {
    case kitty, sixel, iterm, symbols, none

    /// What the terminal of `environment` draws pictures with, as chafa detects it (its database of
    /// terminals, from `TERM`, `TERM_PROGRAM`, `KITTY_WINDOW_ID` and the like). Inside tmux or screen an image
    /// protocol would need their passthrough, which is not known to work: symbols there.
    package static func detect(environment: [String: String]) -> PictureMode {
        let term = environment["TERM"] ?? ""
        if term.isEmpty || term == "dumb" { return .symbols }
        let multiplexed = [environment["TMUX"], environment["STY"]].contains { !($0 ?? "").isEmpty }
        if multiplexed || term.hasPrefix("screen") || term.hasPrefix("tmux") {
            return .symbols
        }
        let detected = withEnvironment(environment) { haul_chafa_detect_pixels($0) }
        switch detected {
        case Int32(HAUL_PIXELS_KITTY): return .kitty
        case Int32(HAUL_PIXELS_ITERM): return .iterm
        case Int32(HAUL_PIXELS_SIXEL): return .sixel
        default: return .symbols
        }
    }

    var chafaPixels: Int32 {
        switch self {
        case .kitty: Int32(HAUL_PIXELS_KITTY)
        case .sixel: Int32(HAUL_PIXELS_SIXEL)
        case .iterm: Int32(HAUL_PIXELS_ITERM)
        case .symbols, .none: Int32(HAUL_PIXELS_SYMBOLS)
        }
    }
}

/// A terminal cell's size in pixels: it sets a picture's aspect on the screen, and how many pixels an image
/// protocol sends for it (the terminal's real resolution).
package struct CellPixels: Sendable, Equatable {
    var width: Int
    var height: Int

    package init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// When the terminal does not say: a cell about twice as tall as wide.
    package static let assumed = CellPixels(width: 10, height: 20)

    /// What the terminal on `fd` reports (its window's size in pixels over its cells, `TIOCGWINSZ`); nil when
    /// it is no terminal or reports no pixels (many do not, and tmux never does).
    package static func of(terminal fd: Int32) -> CellPixels? {
        var size = winsize()
        guard ioctl(fd, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 else { return nil }
        let cell = CellPixels(width: Int(size.ws_xpixel) / Int(size.ws_col), height: Int(size.ws_ypixel) / Int(size.ws_row))
        // Anything else is not a font (a terminal that reports its pixels wrongly).
        guard (2...512).contains(cell.width), (2...512).contains(cell.height) else { return nil }
        return cell
    }
}

/// A picture the terminal draws itself from bytes written straight to it, where the full screen leaves its
/// cells blank: an image protocol's sequence (kitty, sixel, iTerm2), or symbols in 24-bit colour (which
/// curses cannot draw).
struct TerminalImage: Sendable, Equatable {
    /// `kitty`, `sixel` or `iterm`; `symbols` for true-colour symbols.
    var mode: PictureMode
    /// What to write, top first: for an image protocol one element, written at the top-left cell; for
    /// symbols one per line, each written at the start of its line.
    var lines: [[UInt8]]
    /// The cells it covers.
    var columns: Int
    var rows: Int

    init(mode: PictureMode, lines: [[UInt8]], columns: Int, rows: Int) {
        self.mode = mode
        self.lines = lines
        self.columns = columns
        self.rows = rows
    }

    /// Whether what it drew stays on the screen until it is written over: all but kitty's, whose images
    /// live above the text and go only when deleted.
    var overwritable: Bool { mode != .kitty }

    /// The sequence that deletes every kitty image on the screen.
    static let deleteKittyImages: [UInt8] = Array("\u{1b}_Ga=d,d=A\u{1b}\\".utf8)

    /// `image` for a full screen: with `mode`'s protocol, or (for symbols) in 24-bit colour, one element per
    /// line. nil when it comes out empty.
    static func make(_ image: RGBImage, columns: Int, lines: Int, mode: PictureMode, cell: CellPixels,
                             environment: [String: String]) -> TerminalImage? {
        let printed = ChafaPicture.print(image, columns: columns, lines: lines, mode: mode, colors: .trueColor,
                                         environment: environment, cell: cell)
        guard !printed.bytes.isEmpty, printed.columns > 0, printed.lines > 0 else { return nil }
        switch mode {
        case .kitty, .sixel, .iterm:
            return TerminalImage(mode: mode, lines: [printed.bytes], columns: printed.columns, rows: printed.lines)
        case .symbols:
            let rows = printed.bytes.split(separator: UInt8(ascii: "\n")).map { Array($0) }
            return TerminalImage(mode: mode, lines: Array(rows.prefix(printed.lines)), columns: printed.columns,
                                 rows: min(rows.count, printed.lines))
        case .none:
            return nil
        }
    }
}

/// Pictures drawn by libchafa: as the bytes a terminal takes (`haul view`), or as cells for the full screen.
package enum ChafaPicture {
    /// nil when libchafa could be loaded, else why not (its drawings then come out empty). Asked once: a
    /// library's load is tried once.
    package static let unavailable = LoadedLibrary.failure(haul_chafa_load)

    /// What a picture printed for a terminal is.
    package struct Printed: Sendable, Equatable {
        package var bytes: [UInt8]
        /// The cells it takes.
        var columns: Int
        var lines: Int
    }

    /// The bytes that draw `image` in at most `columns` × `lines` cells with `mode` (`none` prints nothing),
    /// aspect kept. Symbols use `colors`; on a terminal without colour they are plain ASCII.
    package static func print(_ image: RGBImage, columns: Int, lines: Int, mode: PictureMode, colors: ColorCapability,
                              environment: [String: String], cell: CellPixels = .assumed) -> Printed {
        guard mode != .none, columns > 0, lines > 0 else { return Printed(bytes: [], columns: 0, lines: 0) }
        var length = 0
        var width: Int32 = 0
        var height: Int32 = 0
        let printed = image.pixels.withUnsafeBufferPointer { pixels in
            withEnvironment(environment) { envp in
                haul_chafa_print(pixels.baseAddress, Int32(image.width), Int32(image.height), Int32(columns),
                                 Int32(lines), mode.chafaPixels, colors.chafaColors, Int32(cell.width),
                                 Int32(cell.height), envp, &length, &width, &height)
            }
        }
        guard let printed else { return Printed(bytes: [], columns: 0, lines: 0) }
        defer { free(printed) }
        let bytes = Array(UnsafeRawBufferPointer(start: printed, count: length))
        return Printed(bytes: bytes, columns: Int(width), lines: Int(height))
    }

    /// `image` as symbol cells for a screen that draws its own cells, at most `columns` × `lines`, aspect kept.
    static func cells(_ image: RGBImage, columns: Int, lines: Int, capability: ColorCapability,
                              cell: CellPixels = .assumed) -> [[PictureCell]] {
        guard columns > 0, lines > 0 else { return [] }
        var chars: UnsafeMutablePointer<UInt32>?
        var foreground: UnsafeMutablePointer<Int32>?
        var background: UnsafeMutablePointer<Int32>?
        var width: Int32 = 0
        var height: Int32 = 0
        let status = image.pixels.withUnsafeBufferPointer { pixels in
            haul_chafa_cells(pixels.baseAddress, Int32(image.width), Int32(image.height), Int32(columns), Int32(lines),
                             capability.chafaColors, Int32(cell.width), Int32(cell.height), &chars, &foreground,
                             &background, &width, &height)
        }
        guard status == 0, let chars, let foreground, let background else { return [] }
        defer {
            free(chars)
            free(foreground)
            free(background)
        }
        return (0..<Int(height)).map { y in
            (0..<Int(width)).map { x in
                let i = y * Int(width) + x
                let character = Unicode.Scalar(chars[i]).map(Character.init) ?? " "
                return PictureCell(character, foreground: color(foreground[i], capability),
                                   background: color(background[i], capability))
            }
        }
    }

    /// A cell colour as chafa gives it: packed 0xRRGGBB in every colour mode (in the 256-colour mode, the RGB of
    /// the palette entry it chose), -1 for the terminal's own.
    private static func color(_ value: Int32, _ capability: ColorCapability) -> PictureColor {
        guard value >= 0, capability != .shades else { return .terminalDefault }
        let (r, g, b) = (Int((value >> 16) & 0xFF), Int((value >> 8) & 0xFF), Int(value & 0xFF))
        switch capability {
        case .trueColor: return .trueColor(r: UInt8(r), g: UInt8(g), b: UInt8(b))
        case .palette256: return .palette256(paletteIndex(r, g, b))
        case .shades: return .terminalDefault
        }
    }

    /// The channel levels of the xterm colour cube (16...231).
    private static let cubeLevels = [0, 95, 135, 175, 215, 255]

    /// The xterm palette entry (16...255) nearest to an RGB colour: the cube's or the gray ramp's (232...255,
    /// levels 8, 18, ..., 238). chafa's 256-colour mode picks entries of this palette, so its colours map back
    /// exactly.
    static func paletteIndex(_ r: Int, _ g: Int, _ b: Int) -> UInt8 {
        func nearest(_ value: Int) -> Int {
            cubeLevels.indices.min { abs(cubeLevels[$0] - value) < abs(cubeLevels[$1] - value) } ?? 0
        }
        let cube = [nearest(r), nearest(g), nearest(b)]
        let cubeDistance = zip([r, g, b], cube).reduce(0) { $0 + ($1.0 - cubeLevels[$1.1]) * ($1.0 - cubeLevels[$1.1]) }
        let gray = Swift.min(23, Swift.max(0, ((r + g + b) / 3 - 8 + 5) / 10))
        let level = 8 + 10 * gray
        let grayDistance = [r, g, b].reduce(0) { $0 + ($1 - level) * ($1 - level) }
        if grayDistance < cubeDistance { return UInt8(232 + gray) }
        return UInt8(16 + 36 * cube[0] + 6 * cube[1] + cube[2])
    }
}

extension ColorCapability {
    var chafaColors: Int32 {
        switch self {
        case .trueColor: Int32(HAUL_COLORS_TRUE)
        case .palette256: Int32(HAUL_COLORS_256)
        case .shades: Int32(HAUL_COLORS_NONE)
        }
    }
}

/// Runs `body` with `environment` as a C `envp` (NUL-terminated array of "KEY=VALUE").
private func withEnvironment<T>(_ environment: [String: String], _ body: (UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> T) -> T {
    var strings: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { strings.forEach { free($0) } }
    // Never empty (it holds the terminator), so it has a base address.
    return strings.withUnsafeMutableBufferPointer { body($0.baseAddress!) }
}
