/// `?`: every key, in a box over the view.
enum HelpOverlay {
    static func lines(multiPartSegments: Int, attached: Bool = false, glyphs: Glyphs) -> [(String, Style)] {
        let keys: [(String, String)?] = [
            nil,
            ("\(glyphs.upDown) k j", "select (PgUp PgDn Home End too)"),
            ("Enter", "details of the selected download"),
            ("c", "cancel the selected download (.part kept)"),
            ("C", "Cancel All: every download and the clock"),
            ("p Space P", "pause / resume the selected download / all"),
            ("r", "retry a failed or cancelled download"),
            ("d Delete", "remove a finished row (files stay)"),
            ("v", "show the selected JPEG as a picture"),
            ("o O", "open the finished file / its folder (xdg-open)"),
            nil,
            ("Enter", "download the selected file, 1 connection"),
            ("m", "download it in \(multiPartSegments) parts at once"),
            ("r", "reload the list"),
            nil,
            ("a", "add a URL"),
            ("+ -", "raise / lower the rate cap (in details: its own)"),
            ("Tab ?", "switch between downloads and files / this help"),
            attached ? ("q", "detach; while downloads run, asks: keep going or pause")
                : ("q", "quit; while downloads run, asks, then pauses them"),
        ]
        let titles = ["Downloads view", "Files view", "Everywhere"]
        var sections = titles.makeIterator()
        return keys.map { entry in
            guard let (key, action) = entry else { return (sections.next() ?? "", .bold) }
            return ("  " + Text.left(key, 10) + action, .plain)
        }
    }

    static func draw(_ state: AppState, glyphs: Glyphs, into grid: inout Grid) {
        let lines = lines(multiPartSegments: state.multiPartSegments, attached: state.attached, glyphs: glyphs)
        let box = Box.centered(width: 66, height: lines.count + 2, in: grid.size)
        box.draw(title: "Keys", glyphs: glyphs, into: &grid)
        box.write(lines, glyphs: glyphs, into: &grid)
    }
}
