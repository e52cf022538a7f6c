/// A framed box with a title, cleared inside: the frame of every overlay.
struct Box {
    /// The frame's area, in the canvas's coordinates.
    var frame: Rect
    var x: Int { frame.x }
    var y: Int { frame.y }
    var width: Int { frame.width }
    var height: Int { frame.height }

    /// A box of at most `width` x `height`, centred on a canvas of `size` and never larger than it.
    static func centered(width: Int, height: Int, in size: Size) -> Box {
        let w = max(0, min(width, size.columns))
        let h = max(0, min(height, size.rows))
        return Box(frame: Rect(x: (size.columns - w) / 2, y: (size.rows - h) / 2, width: w, height: h))
    }

    /// The area inside the frame (a column of margin each side).
    var inner: Rect {
        Rect(x: x + 2, y: y + 1, width: max(0, width - 4), height: max(0, height - 2))
    }

    func draw(title: String, glyphs: Glyphs, style: Style = .plain, into canvas: inout Canvas) {
        guard width > 0, height > 0 else { return }
        for row in y..<(y + height) { canvas.fill(x: x, y: row, count: width) }
        guard width >= 2, height >= 2 else { return }
        let corners = glyphs.boxCorners
        canvas.fill(glyphs.boxHorizontal, x: x + 1, y: y, count: width - 2, style: style)
        canvas.fill(glyphs.boxHorizontal, x: x + 1, y: y + height - 1, count: width - 2, style: style)
        for row in (y + 1)..<(y + height - 1) {
            canvas.fill(glyphs.boxVertical, x: x, y: row, count: 1, style: style)
            canvas.fill(glyphs.boxVertical, x: x + width - 1, y: row, count: 1, style: style)
        }
        canvas.fill(corners.topLeft, x: x, y: y, count: 1, style: style)
        canvas.fill(corners.topRight, x: x + width - 1, y: y, count: 1, style: style)
        canvas.fill(corners.bottomLeft, x: x, y: y + height - 1, count: 1, style: style)
        canvas.fill(corners.bottomRight, x: x + width - 1, y: y + height - 1, count: 1, style: style)
        if width >= 6, !title.isEmpty {
            let text = " " + Text.truncated(title, to: width - 6, ellipsis: glyphs.ellipsis) + " "
            canvas.put(text, x: x + 2, y: y, limit: width - 4, style: style.with { $0.bold = true })
        }
    }

    /// Writes `lines` inside the frame, one per row, clipped.
    func write(_ lines: [(String, Style)], glyphs: Glyphs, into canvas: inout Canvas) {
        let area = inner
        for (offset, line) in lines.prefix(area.height).enumerated() {
            let text = Text.truncated(line.0, to: area.width, ellipsis: glyphs.ellipsis)
            canvas.put(text, x: area.x, y: area.y + offset, limit: area.width, style: line.1)
        }
    }
}
