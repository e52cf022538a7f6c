/// `?`: every key, in a box over the view.
enum HelpOverlay {
    /// The key table's help, section by section.
    static func lines(_ context: KeyBinding.Context) -> [(String, Style)] {
        let sections: [(String, KeyBinding.Scope)] = [("Downloads view", .downloads), ("Files view", .files),
                                                      ("Everywhere", .everywhere)]
        return sections.flatMap { title, scope in
            [(title, Style.bold)] + KeyBindings.help(for: scope, context: context).map { ("  " + Text.left($0.keys, 10) + $0.action, .plain) }
        }
    }

    static func draw(_ state: AppState, glyphs: Glyphs, into canvas: inout Canvas) {
        let lines = lines(state.keyContext(glyphs))
        let box = Box.centered(width: 66, height: lines.count + 2, in: canvas.size)
        box.draw(title: "Keys", glyphs: glyphs, into: &canvas)
        box.write(lines, glyphs: glyphs, into: &canvas)
    }
}
