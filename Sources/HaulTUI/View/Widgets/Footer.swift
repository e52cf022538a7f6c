import HaulCore

/// The last row: key hints for what is on screen, or the current message.
enum Footer {
    static func draw(_ state: AppState, glyphs: Glyphs, into canvas: inout Canvas) {
        let y = 0
        let width = canvas.width
        canvas.fill(x: 0, y: y, count: width)
        if state.quitting {
            let pausing = state.rows.contains { $0.pendingStop == .paused }
            let text = (pausing ? " Pausing downloads and quitting" : (state.attached ? " Detaching" : " Quitting"))
                + glyphs.ellipsis
            canvas.put(Text.truncated(text, to: width, ellipsis: glyphs.ellipsis), x: 0, y: y, style: .bold)
            return
        }
        if state.listing.editing, state.view == .downloads, state.overlay == nil {
            let keyStyle = state.colors ? Style(foreground: .cyan, bold: true) : Style.bold
            var x = 1
            x += canvas.put("/", x: x, y: y, style: keyStyle)
            let hints = "  Enter keep  Esc clear"
            let room = max(0, width - x - DisplayWidth.of(hints) - 1)
            x += canvas.put(Text.suffix(state.listing.filter, columns: room) + "_", x: x, y: y)
            if x + DisplayWidth.of(hints) <= width { canvas.put(hints, x: x, y: y, style: .dim) }
            return
        }
        if let message = state.message {
            let style = state.colors ? Style(foreground: .yellow, bold: true) : Style.bold
            canvas.put(" " + Text.truncated(message, to: width - 1, ellipsis: glyphs.ellipsis), x: 0, y: y, style: style)
            return
        }
        var x = 1
        for (key, action) in hints(state, glyphs: glyphs) {
            let needed = DisplayWidth.of(key) + 1 + DisplayWidth.of(action)
            if x + needed > width { break }
            let keyStyle = state.colors ? Style(foreground: .cyan, bold: true) : Style.bold
            x += canvas.put(key, x: x, y: y, style: keyStyle)
            x += canvas.put(" " + action, x: x, y: y, style: .dim)
            x += 2
        }
    }

    /// Hints in order of importance: as many as fit are shown.
    static func hints(_ state: AppState, glyphs: Glyphs) -> [(String, String)] {
        switch state.overlay {
        case .help: return [("Esc", "close help")]
        case .prompt: return [("Enter", "download"), ("Esc", "cancel")]
        case .refreshPrompt: return [("Enter", "continue from it"), ("Esc", "cancel")]
        case .confirmQuit: return [("y", "quit, pausing downloads"), ("n", "stay")]
        case .confirmRemoveFiles: return [("y", "delete them"), ("n", "keep")]
        case .confirmDetach: return [("Enter", "keep going in the background"), ("p", "pause them"), ("Esc", "stay")]
        case .details, .picture: return [("Esc", "close")]
        case nil: break
        }
        return KeyBindings.hints(state.keyContext(glyphs)).map { ($0.key, $0.action) }
    }
}
