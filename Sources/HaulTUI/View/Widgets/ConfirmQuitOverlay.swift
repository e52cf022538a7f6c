/// `q` while downloads run: quitting pauses them, and they resume on the next run.
enum ConfirmQuitOverlay {
    static func draw(_ state: AppState, glyphs: Glyphs, into canvas: inout Canvas) {
        let running = state.rows.count { $0.isRunning }
        QuestionBox.draw(title: "Quit?", lines: [
            ("\(running) download\(running == 1 ? " is" : "s are") running.", .plain),
            ("Quit and pause \(running == 1 ? "it" : "them")? (resumable later)", .plain),
            ("y quit   n stay", .bold),
        ], glyphs: glyphs, into: &canvas)
    }
}

/// `q` while the service's downloads run: they keep going without the screen (the default), or pause.
enum ConfirmDetachOverlay {
    static func draw(_ state: AppState, glyphs: Glyphs, into canvas: inout Canvas) {
        let running = state.rows.count { $0.isRunning }
        QuestionBox.draw(title: "Detach?", lines: [
            ("\(running) download\(running == 1 ? " is" : "s are") running.", .plain),
            ("Keep \(running == 1 ? "it" : "them") going in the background?", .plain),
            ("Enter keep going   p pause   Esc stay", .bold),
        ], glyphs: glyphs, into: &canvas)
    }
}

/// A question in a box in the middle of the screen.
enum QuestionBox {
    static func draw(title: String, lines: [(String, Style)], glyphs: Glyphs, into canvas: inout Canvas) {
        let box = Box.centered(width: 50, height: lines.count + 2, in: canvas.size)
        box.draw(title: title, glyphs: glyphs, into: &canvas)
        box.write(lines, glyphs: glyphs, into: &canvas)
    }
}
