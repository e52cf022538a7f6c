/// The characters the screen is drawn with: Unicode block and box characters, or plain ASCII when the
/// terminal's locale is not UTF-8.
struct Glyphs: Sendable {
    var barFull: Character
    /// Eighths of a cell, index 1...7 (index 0 unused).
    var barPartials: [Character]
    var barEmpty: Character
    var ellipsis: String
    var marker: Character
    var separator: Character
    var boxHorizontal: Character
    var boxVertical: Character
    var boxCorners: (topLeft: Character, topRight: Character, bottomLeft: Character, bottomRight: Character)
    var upDown: String
    /// Before the overall cap in the header.
    var atMost: String

    static let unicode = Glyphs(
        barFull: "█", barPartials: [" ", "▏", "▎", "▍", "▌", "▋", "▊", "▉"], barEmpty: "░", ellipsis: "…",
        marker: "›", separator: "│", boxHorizontal: "─", boxVertical: "│", boxCorners: ("┌", "┐", "└", "┘"),
        upDown: "↑↓", atMost: "≤")

    static let ascii = Glyphs(
        barFull: "#", barPartials: [], barEmpty: "-", ellipsis: "~", marker: ">", separator: "|",
        boxHorizontal: "-", boxVertical: "|", boxCorners: ("+", "+", "+", "+"), upDown: "Up/Dn", atMost: "max")

    static func `for`(_ state: AppState) -> Glyphs {
        state.unicode ? .unicode : .ascii
    }
}
