/// A cell colour; `nil` in a `Style` means the terminal's default. The eight basic colours work on any
/// colour terminal; the terminal maps `palette` and `rgb` (pictures) to the nearest colour it has.
enum Color: Sendable, Hashable {
    case black, red, green, yellow, blue, magenta, cyan, white
    /// An index into the xterm 256-colour palette.
    case palette(UInt8)
    case rgb(UInt8, UInt8, UInt8)
}

/// How a cell is drawn. Without colours, `bold`, `reverse` and `dim` still carry the meaning.
struct Style: Sendable, Hashable {
    var foreground: Color?
    var background: Color?
    var bold = false
    var reverse = false
    var dim = false

    static let plain = Style()
    static let bold = Style(bold: true)
    static let dim = Style(dim: true)
    static let reverse = Style(reverse: true)

    init(foreground: Color? = nil, background: Color? = nil, bold: Bool = false, reverse: Bool = false,
         dim: Bool = false) {
        self.foreground = foreground
        self.background = background
        self.bold = bold
        self.reverse = reverse
        self.dim = dim
    }

    func with(_ change: (inout Style) -> Void) -> Style {
        var copy = self
        change(&copy)
        return copy
    }
}

/// One screen position. A wide character sits in a cell of `width` 2 followed by a continuation cell
/// (`width` 0) that holds nothing of its own.
struct Cell: Sendable, Hashable {
    /// What is drawn: one printable character (see `DisplayWidth.printable`), or "" in a continuation.
    var text: String
    var style: Style
    var width: UInt8

    static let blank = Cell(text: " ", style: .plain, width: 1)
    static let continuation = Cell(text: "", style: .plain, width: 0)

    var isContinuation: Bool { width == 0 }
}

/// A terminal-sized rectangle of cells: what `render` produces and `NcursesTerminal` draws.
///
/// Writing never goes outside the grid and never leaves half a wide character: overwriting either half of
/// one blanks the other half, and a wide character that does not fit before the right edge becomes a space.
struct Grid: Sendable, Equatable {
    let size: Size
    private(set) var cells: [Cell]
    /// A picture the terminal draws itself over blank cells (an image protocol, or 24-bit colour).
    var image: PlacedImage?

    init(_ size: Size) {
        self.size = Size(columns: max(0, size.columns), rows: max(0, size.rows))
        cells = Array(repeating: .blank, count: self.size.columns * self.size.rows)
    }

    var width: Int { size.columns }
    var height: Int { size.rows }

    subscript(x: Int, y: Int) -> Cell {
        cells[y * width + x]
    }

    /// The grid as text, one string per row, continuation cells skipped and trailing spaces trimmed.
    var lines: [String] {
        (0..<height).map { y in
            var line = ""
            for x in 0..<width where !self[x, y].isContinuation { line += self[x, y].text }
            while line.last == " " { line.removeLast() }
            return line
        }
    }

    /// Writes `text` from column `x` of row `y`, clipped to `limit` columns (and to the grid), and returns
    /// the number of columns written.
    @discardableResult
    mutating func put(_ text: String, x: Int, y: Int, limit: Int? = nil, style: Style = .plain) -> Int {
        guard y >= 0, y < height else { return 0 }
        let end = min(width, x + (limit ?? width))
        var column = x
        for character in text {
            guard let shown = DisplayWidth.printable(character), let first = shown.unicodeScalars.first else { continue }
            let columns = DisplayWidth.of(first)
            if columns == 0 { continue }
            if column + columns > end {
                // A wide character that does not fit: pad the last column instead of splitting it.
                if columns == 2, column < end, column >= 0 { set(column, y, Cell(text: " ", style: style, width: 1)) }
                column = min(end, column + columns)
                break
            }
            if column >= 0 {
                set(column, y, Cell(text: shown, style: style, width: UInt8(columns)))
                if columns == 2 { set(column + 1, y, Cell(text: "", style: style, width: 0)) }
            }
            column += columns
        }
        return max(0, min(column, end) - x)
    }

    /// Fills `count` columns from `x` with `character` (narrow) in `style`. Like `put`, it never puts a
    /// control character in a cell: one that is not printable and narrow fills with `?`.
    mutating func fill(_ character: Character = " ", x: Int, y: Int, count: Int, style: Style = .plain) {
        guard y >= 0, y < height, count > 0 else { return }
        let text = DisplayWidth.of(character) == 1 ? DisplayWidth.printable(character) ?? "?" : "?"
        for column in max(0, x)..<min(width, x + count) {
            set(column, y, Cell(text: text, style: style, width: 1))
        }
    }

    /// Changes the style of `count` cells from `x`, keeping their text.
    mutating func restyle(x: Int, y: Int, count: Int, _ change: (inout Style) -> Void) {
        guard y >= 0, y < height, count > 0 else { return }
        for column in max(0, x)..<min(width, x + count) {
            change(&cells[y * width + column].style)
        }
    }

    private mutating func set(_ x: Int, _ y: Int, _ cell: Cell) {
        guard x >= 0, x < width, y >= 0, y < height else { return }
        let index = y * width + x
        let old = cells[index]
        if old.isContinuation, x > 0, cell.width != 0 {
            cells[index - 1] = Cell(text: " ", style: cells[index - 1].style, width: 1)
        }
        if old.width == 2, cell.width != 2, x + 1 < width {
            cells[index + 1] = Cell(text: " ", style: old.style, width: 1)
        }
        cells[index] = cell
    }
}

/// Columns × rows of a terminal or a grid.
struct Size: Sendable, Hashable, CustomStringConvertible {
    var columns: Int
    var rows: Int

    var description: String { "\(columns)x\(rows)" }
}
