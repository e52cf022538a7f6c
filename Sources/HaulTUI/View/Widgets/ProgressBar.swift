/// A horizontal bar, `width` columns, filled to `fraction` in eighths of a cell (whole cells in ASCII).
enum ProgressBar {
    static func draw(_ fraction: Double?, x: Int, y: Int, width: Int, style: Style, glyphs: Glyphs,
                     into canvas: inout Canvas) {
        guard width > 0 else { return }
        let emptyStyle = Style(foreground: style.foreground, dim: true)
        guard let fraction else {
            canvas.fill(glyphs.barEmpty, x: x, y: y, count: width, style: emptyStyle)
            return
        }
        let clamped = min(1, max(0, fraction.isFinite ? fraction : 0))
        let steps = glyphs.barPartials.isEmpty ? 1 : 8
        let filled = Int((clamped * Double(width * steps)).rounded(.down))
        let full = filled / steps
        let partial = filled % steps
        canvas.fill(glyphs.barFull, x: x, y: y, count: full, style: style)
        var column = x + full
        if partial > 0 {
            canvas.fill(glyphs.barPartials[partial], x: column, y: y, count: 1, style: style)
            column += 1
        }
        canvas.fill(glyphs.barEmpty, x: column, y: y, count: x + width - column, style: emptyStyle)
    }
}
