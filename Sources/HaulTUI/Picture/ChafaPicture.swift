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

/// Pictures drawn by libchafa: as the bytes a terminal takes (`haul view`), or as cells for the full screen.
package enum ChafaPicture {
    /// What a picture printed for a terminal is.
    package struct Printed: Sendable, Equatable {
        package var bytes: [UInt8]
        /// The cells it takes.
        package var columns: Int
        package var lines: Int
    }

    /// The bytes that draw `image` in at most `columns` × `lines` cells with `mode` (`none` prints nothing),
    /// aspect kept. Symbols use `colors`; on a terminal without colour they are plain ASCII.
    package static func print(_ image: RGBImage, columns: Int, lines: Int, mode: PictureMode, colors: ColorCapability,
                              environment: [String: String]) -> Printed {
        guard mode != .none, columns > 0, lines > 0 else { return Printed(bytes: [], columns: 0, lines: 0) }
        var length = 0
        var width: Int32 = 0
        var height: Int32 = 0
        let printed = image.pixels.withUnsafeBufferPointer { pixels in
            withEnvironment(environment) { envp in
                haul_chafa_print(pixels.baseAddress, Int32(image.width), Int32(image.height), Int32(columns),
                                 Int32(lines), mode.chafaPixels, colors.chafaColors, envp, &length, &width, &height)
            }
        }
        guard let printed else { return Printed(bytes: [], columns: 0, lines: 0) }
        defer { free(printed) }
        let bytes = Array(UnsafeRawBufferPointer(start: printed, count: length))
        return Printed(bytes: bytes, columns: Int(width), lines: Int(height))
    }

    /// `image` as symbol cells for a screen that draws its own cells, at most `columns` × `lines`, aspect kept.
    package static func cells(_ image: RGBImage, columns: Int, lines: Int, capability: ColorCapability) -> [[PictureCell]] {
        guard columns > 0, lines > 0 else { return [] }
        var chars: UnsafeMutablePointer<UInt32>?
        var foreground: UnsafeMutablePointer<Int32>?
        var background: UnsafeMutablePointer<Int32>?
        var width: Int32 = 0
        var height: Int32 = 0
        let status = image.pixels.withUnsafeBufferPointer { pixels in
            haul_chafa_cells(pixels.baseAddress, Int32(image.width), Int32(image.height), Int32(columns), Int32(lines),
                             capability.chafaColors, &chars, &foreground, &background, &width, &height)
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

    private static func color(_ value: Int32, _ capability: ColorCapability) -> PictureColor {
        switch capability {
        case .trueColor:
            guard value >= 0 else { return .terminalDefault }
            return .trueColor(r: UInt8((value >> 16) & 0xFF), g: UInt8((value >> 8) & 0xFF), b: UInt8(value & 0xFF))
        case .palette256:
            // chafa's own indexes past 255 name the terminal's foreground, background or transparency.
            guard (0...255).contains(value) else { return .terminalDefault }
            return .palette256(UInt8(value))
        case .shades:
            return .terminalDefault
        }
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
