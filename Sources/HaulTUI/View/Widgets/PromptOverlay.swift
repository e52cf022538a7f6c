/// `a` (and `u`, for a download's new address): a one-line field for a URL. The end of a long URL stays in
/// view, followed by the cursor.
enum PromptOverlay {
    static func draw(_ text: String, title: String = "Add a download", glyphs: Glyphs, into canvas: inout Canvas) {
        let box = Box.centered(width: 72, height: 5, in: canvas.size)
        box.draw(title: title, glyphs: glyphs, into: &canvas)
        let area = box.inner
        let field = max(0, area.width - 2)
        let visible = Text.suffix(text, columns: max(0, field - 1))
        box.write([("URL, then Enter (Esc cancels):", .dim), ("> " + visible, .plain)], glyphs: glyphs, into: &canvas)
        let cursorX = area.x + 2 + DisplayWidth.of(visible)
        if area.height >= 2, cursorX < area.x + area.width {
            canvas.fill("_", x: cursorX, y: area.y + 1, count: 1, style: Style(bold: true))
        }
    }
}
