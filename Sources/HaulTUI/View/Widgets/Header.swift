import HaulCore

/// Row 0: the program and view on the left; the elapsed clock, total speed and "N of M done" on the right.
/// On a narrow screen the least important parts go first: the view name, the speed, the clock's label.
/// While the service is away (an attached screen), its right side says so instead, on a yellow bar.
enum Header {
    static func draw(_ state: AppState, glyphs: Glyphs, into canvas: inout Canvas) {
        if state.connection != .connected {
            drawAway(state, glyphs: glyphs, into: &canvas)
            return
        }
        let y = 0
        let width = canvas.width
        let bar = state.colors ? Style(foreground: .black, background: .cyan) : Style.reverse
        canvas.fill(x: 0, y: y, count: width, style: bar)

        let clock = ByteFormat.duration(seconds: Double(state.elapsedSeconds))
        let done = "\(state.doneCount) of \(state.rows.count) done"
        // The cap, when there is one, beside the speed it bounds: "1.20 MiB/s ≤ 2.00 MiB/s".
        let speed = ByteFormat.rate(state.totalSpeed) + (state.overallLimit.map { " \(glyphs.atMost) \(ByteFormat.rate(Double($0)))" } ?? "")
        let view = state.view == .downloads ? "Downloads" : "Files"
        let schedule = state.schedule.map { scheduleText($0, glyphs: glyphs) + "  " } ?? ""
        let arranged = arrangement(state, glyphs: glyphs)
        // Each candidate, most complete first; the first that fits is drawn.
        let candidates: [(left: String, right: String)] = [
            (" haul \(glyphs.separator) \(view)\(arranged)", "\(schedule)elapsed \(clock)  \(speed)  \(done) "),
            (" haul\(arranged)", "\(schedule)\(clock)  \(speed)  \(done) "),
            (" haul", "\(schedule)\(clock)  \(speed)  \(done) "),
            (" haul \(glyphs.separator) \(view)\(arranged)", "elapsed \(clock)  \(speed)  \(done) "),
            (" haul \(glyphs.separator) \(view)\(arranged)", "\(clock)  \(speed)  \(done) "),
            (" haul\(arranged)", "\(clock)  \(done) "),
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

extension Header {
    /// Where the schedule stands: the window open now ("window 01:00-07:00 open") or the next to open
    /// ("closed till 01:00-07:00"), the cap a rate window sets ("≤ 1.00 MiB/s", "no cap"), and when the next
    /// change comes ("next 07:00").
    static func scheduleText(_ schedule: ScheduleStatus, glyphs: Glyphs) -> String {
        var parts: [String] = []
        if let window = schedule.window {
            parts.append(schedule.open ? "window \(window) open" : "closed till \(window)")
        }
        if let limit = schedule.limit {
            parts.append(limit > 0 ? "\(glyphs.atMost) \(ByteFormat.rate(Double(limit)))" : "no cap")
        }
        if let next = schedule.nextClock { parts.append("next \(next)") }
        return parts.joined(separator: ", ")
    }

    /// The downloads view's sort and filter when not the plain queue: " │ by name │ /iso (3 of 120)".
    static func arrangement(_ state: AppState, glyphs: Glyphs) -> String {
        guard state.view == .downloads else { return "" }
        var text = ""
        if state.listing.sort != .queue { text += " \(glyphs.separator) by \(state.listing.sort.label)" }
        if !state.listing.filter.isEmpty {
            text += " \(glyphs.separator) /\(state.listing.filter) (\(state.shownIndices.count) of \(state.rows.count))"
        }
        return text
    }

    /// The line an attached screen shows while the service is away, or while its snapshot comes back.
    static func connectionLine(_ state: AppState, glyphs: Glyphs) -> (short: String, long: String)? {
        switch state.connection {
        case .connected:
            return nil
        case .lost(let attempts, let problem):
            let line = "service stopped; reconnecting\(glyphs.ellipsis)"
            guard let problem, attempts > 0 else { return (line, line) }
            let tries = attempts == 1 ? "1 attempt" : "\(attempts) attempts"
            return (line, "\(line) (\(tries) failed: \(problem))")
        case .resyncing:
            let line = "service back; loading the queue\(glyphs.ellipsis)"
            return (line, line)
        }
    }

    private static func drawAway(_ state: AppState, glyphs: Glyphs, into canvas: inout Canvas) {
        guard let line = connectionLine(state, glyphs: glyphs) else { return }
        let width = canvas.width
        let bar = state.colors ? Style(foreground: .black, background: .yellow) : Style.reverse
        canvas.fill(x: 0, y: 0, count: width, style: bar)
        let view = state.view == .downloads ? "Downloads" : "Files"
        // As much of the view's name as leaves the short line room; then as much of the long line as fits.
        let lefts = [" haul \(glyphs.separator) \(view)", " haul", ""]
        let left = lefts.first { DisplayWidth.of($0) + DisplayWidth.of(line.short) + 3 <= width } ?? ""
        canvas.put(left, x: 0, y: 0, limit: width, style: bar.with { $0.bold = true })
        let room = max(0, width - DisplayWidth.of(left) - (left.isEmpty ? 0 : 1))
        let right = Text.truncated(" \(line.long) ", to: room, ellipsis: glyphs.ellipsis)
        let rightX = max(0, width - DisplayWidth.of(right))
        canvas.put(right, x: rightX, y: 0, limit: width - rightX, style: bar.with { $0.bold = true })
    }
}
