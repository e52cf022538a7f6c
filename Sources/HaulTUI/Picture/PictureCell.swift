/// What colours the terminal can show, best first.
package enum ColorCapability: Sendable, Equatable, CaseIterable {
    /// 24-bit colour (`COLORTERM=truecolor` or `24bit`).
    case trueColor
    /// The xterm 256-colour palette: the 6×6×6 cube and the grayscale ramp.
    case palette256
    /// No usable colour: brightness as shade characters " ░▒▓█" in the terminal's own colours.
    case shades

    /// Picks the capability from the number of colours curses reports and the environment.
    static func detect(colors: Int, environment: [String: String]) -> ColorCapability {
        let colorTerm = environment["COLORTERM"]?.lowercased() ?? ""
        if colors >= 1 << 24 || ((colorTerm == "truecolor" || colorTerm == "24bit") && colors >= 8) {
            return .trueColor
        }
        return colors >= 256 ? .palette256 : .shades
    }
}

/// One colour of a picture cell.
package enum PictureColor: Sendable, Equatable, Hashable {
    case trueColor(r: UInt8, g: UInt8, b: UInt8)
    /// An index into the xterm 256-colour palette (16...255 here: the cube and the grayscale ramp).
    case palette256(UInt8)
    /// The terminal's own foreground or background.
    case terminalDefault
}

/// One terminal cell of a picture: a character drawn in `foreground` on `background`.
package struct PictureCell: Sendable, Equatable, Hashable {
    var character: Character
    var foreground: PictureColor
    var background: PictureColor

    package init(_ character: Character, foreground: PictureColor, background: PictureColor) {
        self.character = character
        self.foreground = foreground
        self.background = background
    }
}
