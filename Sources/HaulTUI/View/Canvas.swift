/// An area of the screen: columns `x..<x+width` of rows `y..<y+height`.
struct Rect: Sendable, Hashable {
    var x: Int
    var y: Int
    var width: Int
    var height: Int

    /// One whole row of a screen `width` wide.
    static func row(_ y: Int, width: Int) -> Rect {
        Rect(x: 0, y: y, width: width, height: 1)
    }

    /// The part of this area inside `other` (empty when they do not meet).
    func intersection(_ other: Rect) -> Rect {
        let left = max(x, other.x), top = max(y, other.y)
        let right = min(x + width, other.x + other.width), bottom = min(y + height, other.y + other.height)
        return Rect(x: left, y: top, width: max(0, right - left), height: max(0, bottom - top))
    }
}

/// A picture the terminal draws itself, with the grid position of its top-left cell.
struct PlacedImage: Sendable, Equatable {
    var x: Int
    var y: Int
    var image: TerminalImage
}

/// What a widget draws on: the grid seen through one area. Coordinates count from the area's top-left
/// corner and nothing lands outside it, so a widget neither knows nor can spoil where it sits.
struct Canvas {
    fileprivate var grid: Grid
    let area: Rect

    var width: Int { area.width }
    var height: Int { area.height }
    var size: Size { Size(columns: width, rows: height) }

    /// `Grid.put` within the area.
    @discardableResult
    mutating func put(_ text: String, x: Int, y: Int, limit: Int? = nil, style: Style = .plain) -> Int {
        guard y >= 0, y < height else { return 0 }
        let end = min(width, x + (limit ?? width))
        return grid.put(text, x: area.x + x, y: area.y + y, limit: max(0, end - x), style: style)
    }

    /// `Grid.fill` within the area.
    mutating func fill(_ character: Character = " ", x: Int, y: Int, count: Int, style: Style = .plain) {
        guard y >= 0, y < height else { return }
        let (from, to) = (max(0, x), min(width, x + count))
        guard to > from else { return }
        grid.fill(character, x: area.x + from, y: area.y + y, count: to - from, style: style)
    }

    /// Puts a picture the terminal draws itself at `x`, `y`, over blank cells; nothing unless it fits the area.
    mutating func place(_ image: TerminalImage, x: Int, y: Int) {
        guard x >= 0, y >= 0, x + image.columns <= width, y + image.rows <= height else { return }
        for row in 0..<image.rows { fill(x: x, y: y + row, count: image.columns) }
        grid.image = PlacedImage(x: area.x + x, y: area.y + y, image: image)
    }

    /// `Grid.restyle` within the area.
    mutating func restyle(x: Int, y: Int, count: Int, _ change: (inout Style) -> Void) {
        guard y >= 0, y < height else { return }
        let (from, to) = (max(0, x), min(width, x + count))
        guard to > from else { return }
        grid.restyle(x: area.x + from, y: area.y + y, count: to - from, change)
    }
}

extension Grid {
    /// Lets `body` draw into `area` (clipped to the grid); nothing when `area` is nil.
    mutating func draw(in area: Rect?, _ body: (inout Canvas) -> Void) {
        guard let area else { return }
        // The grid moves into the canvas and back (swaps, not copies of its cells).
        var canvas = Canvas(grid: Grid(Size(columns: 0, rows: 0)),
                            area: area.intersection(Rect(x: 0, y: 0, width: width, height: height)))
        swap(&self, &canvas.grid)
        body(&canvas)
        swap(&self, &canvas.grid)
    }
}
