import HaulCore

/// `v`: the selected JPEG (complete, or its partial preview) over the whole screen, drawn from the cells
/// of the picture widget (`Sources/HaulTUI/Picture/`), with its caption on the last line of the frame.
enum PictureOverlay {
    /// The cells a picture may take on a screen of `size`: inside the frame, less the caption line.
    static func area(in size: Size) -> (width: Int, height: Int) {
        (max(0, size.columns - 4), max(0, size.rows - 3))
    }

    static func draw(path: String, picture: PictureCells?, glyphs: Glyphs, into canvas: inout Canvas) {
        let box = Box.centered(width: canvas.width, height: canvas.height, in: canvas.size)
        let name = FilePath.baseName(of: path)
        box.draw(title: name, glyphs: glyphs, into: &canvas)
        let inner = box.inner
        guard let picture else {
            box.write([("Decoding \(name)\(glyphs.ellipsis)", .dim)], glyphs: glyphs, into: &canvas)
            return
        }
        let area = area(in: canvas.size)
        let left = inner.x + max(0, (area.width - picture.columns) / 2)
        let top = inner.y + max(0, (area.height - picture.lines) / 2)
        if let image = picture.image { canvas.place(image, x: left, y: top) }
        for (row, cells) in picture.rows.prefix(area.height).enumerated() {
            for (column, cell) in cells.prefix(area.width).enumerated() {
                let style = Style(foreground: color(cell.foreground), background: color(cell.background))
                canvas.fill(cell.character, x: left + column, y: top + row, count: 1, style: style)
            }
        }
        if inner.height > 0 {
            let caption = Text.truncated(picture.caption + "  (Esc closes)", to: inner.width, ellipsis: glyphs.ellipsis)
            canvas.put(caption, x: inner.x, y: inner.y + inner.height - 1, limit: inner.width,
                     style: picture.failed ? .bold : .dim)
        }
    }

    static func color(_ color: PictureColor) -> Color? {
        switch color {
        case .trueColor(let r, let g, let b): .rgb(r, g, b)
        case .palette256(let index): .palette(index)
        case .terminalDefault: nil
        }
    }
}
