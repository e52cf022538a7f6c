import HaulCore

/// Row 0: the program and view on the left; the elapsed clock, total speed and "N of M done" on the right.
/// On a narrow screen the least important parts go first: the view name, the speed, the clock's label.
enum Header {
    static func draw(_ state: AppState, glyphs: Glyphs, into canvas: inout Canvas) {
        let y = 0
        let width = canvas.width
        let bar = state.colors ? Style(foreground: .black, background: .cyan) : Style.reverse
        canvas.fill(x: 0, y: y, count: width, style: bar)

        let clock = ByteFormat.duration(seconds: Double(state.elapsedSeconds))
        let done = "\(state.doneCount) of \(state.rows.count) done"
        // The cap, when there is one, beside the speed it bounds: "1.20 MiB/s ≤ 2.00 MiB/s".
        let speed = ByteFormat.rate(state.totalSpeed) + (state.overallLimit.map { " \(glyphs.atMost) \(ByteFormat.rate(Double($0)))" } ?? "")
        let view = state.view == .downloads ? "Downloads" : "Files"
        // Each candidate, most complete first; the first that fits is drawn.
        let candidates: [(left: String, right: String)] = [
            (" haul \(glyphs.separator) \(view)", "elapsed \(clock)  \(speed)  \(done) "),
            (" haul \(glyphs.separator) \(view)", "\(clock)  \(speed)  \(done) "),
            (" haul", "\(clock)  \(speed)  \(done) "),
            (" haul", "\(clock)  \(done) "),
            ("", " \(clock)  \(done) "),
            ("", " \(clock) \(state.doneCount)/\(state.rows.count) "),
        ]
        let chosen = candidates.first { DisplayWidth.of($0.left) + DisplayWidth.of($0.right) + 1 <= width }
            ?? ("", " \(clock) \(state.doneCount)/\(state.rows.count)")
        canvas.put(chosen.left, x: 0, y: y, limit: width, style: bar.with { $0.bold = true })
        let right = Text.truncated(chosen.right, to: width, ellipsis: glyphs.ellipsis)
        let rightX = max(0, width - DisplayWidth.of(right))
        canvas.put(right, x: rightX, y: y, limit: width - rightX, style: bar)
        if state.clockRunning, let clockX = right.firstRange(of: clock).map({ DisplayWidth.of(String(right[..<$0.lowerBound])) }) {
            canvas.restyle(x: rightX + clockX, y: y, count: DisplayWidth.of(clock)) { $0.bold = true }
        }
    }
}
