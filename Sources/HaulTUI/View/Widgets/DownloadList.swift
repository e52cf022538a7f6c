import HaulCore

/// The downloads view: column headings and one row per download (name, bar, percent, bytes, speed, ETA,
/// state), scrolled so the selection is visible. Columns drop out as the screen narrows.
enum DownloadList {
    /// Column widths for a screen `width` wide; 0 hides a column. Below 111 columns the byte counts get
    /// shorter and speed and ETA move into the state column of a running download (`compact`).
    struct Columns: Equatable {
        var name = 0, bar = 0, percent = 4, bytes = 0, speed = 0, eta = 0, state = 0
        var compact = true

        init(width: Int) {
            let available = width - 1  // the selection marker
            switch available {
            case 110...:
                (bytes, speed, eta, state) = (21, 11, 7, 26)
                compact = false
            case 72...:
                (bytes, state) = (16, 20)
            case 50...:
                state = 16
            default:
                state = 0
            }
            let fixed = [percent, bytes, speed, eta, state].filter { $0 > 0 }
            let used = fixed.reduce(0, +) + fixed.count  // each fixed column has a space before it
            let rest = available - used
            if available >= 50 {
                name = min(60, max(12, (rest - 1) * 55 / 100))
                bar = min(50, rest - 1 - name)
                if bar < 6 { (name, bar) = (rest, 0) }
                // A very wide screen gives the rest to the state, where failure reasons are.
                state += max(0, rest - 1 - name - bar)
            } else {
                // Narrow: name, percent, and a short state in what is left.
                name = max(1, min(rest, max(6, (rest * 55) / 100)))
                state = max(0, rest - name - 1)
            }
        }
    }

    /// The rows, scrolled so the selection shows, into the list's area.
    static func draw(_ state: AppState, glyphs: Glyphs, into canvas: inout Canvas) {
        guard canvas.height > 0 else { return }
        if state.rows.isEmpty {
            drawEmpty(state, glyphs: glyphs, into: &canvas)
            return
        }
        // Only the rows on screen are drawn, whatever the length of the list.
        let shown = state.shownIndices
        if shown.isEmpty {
            let line = "No download's name contains \"\(state.listing.filter)\" (Esc clears the filter)."
            canvas.put(Text.truncated(line, to: canvas.width - 2, ellipsis: glyphs.ellipsis), x: 2, y: 0, style: .dim)
            return
        }
        let columns = Columns(width: canvas.width)
        let offset = Layout.scrollOffset(selection: state.selection, count: shown.count, height: canvas.height)
        for (line, position) in (offset..<min(shown.count, offset + canvas.height)).enumerated() {
            drawRow(state.rows[shown[position]], selected: position == state.selection, columns: columns,
                    y: line, colors: state.colors, glyphs: glyphs, into: &canvas)
        }
    }

    /// The column headings, into a one-row area as wide as the list.
    static func drawHeadings(into canvas: inout Canvas) {
        let columns = Columns(width: canvas.width)
        let y = 0
        var x = 1
        func heading(_ title: String, _ width: Int, right: Bool = false) {
            guard width > 0 else { return }
            canvas.put(right ? Text.right(title, width) : Text.left(title, width), x: x, y: y, limit: width, style: .bold)
            x += width + 1
        }
        heading("NAME", columns.name)
        heading("PROGRESS", columns.bar)
        heading("%", columns.percent, right: true)
        heading("DONE / TOTAL", columns.bytes, right: true)
        heading("SPEED", columns.speed, right: true)
        heading("ETA", columns.eta, right: true)
        heading("STATE", columns.state)
    }

    private static func drawEmpty(_ state: AppState, glyphs: Glyphs, into canvas: inout Canvas) {
        var lines = ["No downloads yet.", "Press a to add a URL."]
        if let server = state.files.server { lines.append("Tab browses \(server).") }
        for (offset, line) in lines.prefix(canvas.height).enumerated() {
            canvas.put(Text.truncated(line, to: canvas.width - 2, ellipsis: glyphs.ellipsis), x: 2, y: offset, style: .dim)
        }
    }

    static func drawRow(_ row: DownloadRow, selected: Bool, columns: Columns, y: Int, colors: Bool, glyphs: Glyphs,
                        into canvas: inout Canvas) {
        var x = 0
        canvas.put(selected ? String(glyphs.marker) : " ", x: 0, y: y, style: .bold)
        x = 1
        func column(_ text: String, _ width: Int, right: Bool = false, style: Style = .plain) {
            guard width > 0 else { return }
            canvas.put(right ? Text.right(text, width) : Text.left(text, width), x: x, y: y, limit: width, style: style)
            x += width + 1
        }
        column(nameText(row, width: columns.name, glyphs: glyphs), columns.name)
        if columns.bar > 0 {
            ProgressBar.draw(row.fraction, x: x, y: y, width: columns.bar, style: barStyle(row, colors: colors),
                             glyphs: glyphs, into: &canvas)
            x += columns.bar + 1
        }
        column(percentText(row), columns.percent, right: true)
        column(bytesText(row, compact: columns.compact), columns.bytes, right: true)
        column(row.state == .downloading ? ByteFormat.rate(row.bytesPerSecond) : "", columns.speed, right: true)
        column(etaText(row), columns.eta, right: true)
        let state = columns.compact && row.state == .downloading && row.pendingStop == nil && row.retrying == nil
            ? [ByteFormat.rate(row.bytesPerSecond), row.secondsLeft.map { ByteFormat.duration(seconds: $0) + " left" }]
                .compactMap { $0 }.joined(separator: " ")
            : stateText(row)
        column(Text.truncated(state, to: columns.state, ellipsis: glyphs.ellipsis), columns.state,
               style: stateStyle(row, colors: colors))
        if selected {
            canvas.restyle(x: 0, y: y, count: canvas.width) { $0.reverse = true }
        }
    }

    /// The name, and the category that placed it (`movie.mkv [video]`) when the column has room for both;
    /// the name's middle gives way first.
    static func nameText(_ row: DownloadRow, width: Int, glyphs: Glyphs) -> String {
        guard let category = row.record.category else {
            return Text.truncatedMiddle(row.name, to: width, ellipsis: glyphs.ellipsis)
        }
        let tag = " [" + category + "]"
        let room = width - DisplayWidth.of(tag)
        guard room >= 8 else { return Text.truncatedMiddle(row.name, to: width, ellipsis: glyphs.ellipsis) }
        return Text.truncatedMiddle(row.name, to: room, ellipsis: glyphs.ellipsis) + tag
    }

    static func percentText(_ row: DownloadRow) -> String {
        guard let fraction = row.fraction else { return "--" }
        // Never show 100% before the file is complete.
        let percent = Int((fraction * 100).rounded(.down))
        return "\(row.state == .done ? 100 : min(99, percent))%"
    }

    /// "9.75 MiB / 20.0 MiB"; compact: "9.75/20.0 MiB" when both have the same unit, else without spaces.
    static func bytesText(_ row: DownloadRow, compact: Bool = false) -> String {
        let done = ByteFormat.size(row.completed)
        guard let total = row.total.map(ByteFormat.size) else { return compact ? "\(done)/?" : "\(done) / ?" }
        guard compact else { return "\(done) / \(total)" }
        let doneParts = done.split(separator: " ")
        let totalParts = total.split(separator: " ")
        if doneParts.count == 2, totalParts.count == 2, doneParts[1] == totalParts[1] {
            return "\(doneParts[0])/\(total)"
        }
        return "\(done)/\(total)"
    }

    static func etaText(_ row: DownloadRow) -> String {
        guard row.state == .downloading else { return "" }
        return row.secondsLeft.map { ByteFormat.duration(seconds: $0) } ?? "--:--"
    }

    /// The state as the SPEC words it, with what the user asked for while the manager has not confirmed it.
    static func stateText(_ row: DownloadRow) -> String {
        switch row.pendingStop {
        case .cancelled?: return "cancelling"
        case .paused?: return "pausing"
        default: break
        }
        if let retry = row.retrying, !row.state.isFinished { return "retry \(retry.attempt) of \(retry.of): \(retry.reason)" }
        if row.record.filesRemoved != nil, row.state.isFinished { return "removed with files" }
        switch row.state {
        case .queued: return "queued"
        case .scheduled: return "scheduled"
        case .connecting: return "connecting"
        case .downloading: return "downloading"
        case .paused: return "paused"
        case .done: return "done"
        case .failed(let error): return "failed: \(error.message)"
        case .cancelled: return row.previewPath != nil ? "cancelled, partial preview saved" : "cancelled"
        case .noSpace(let why): return "no space: \(why.message)"
        }
    }

    static func barStyle(_ row: DownloadRow, colors: Bool) -> Style {
        guard colors else { return .plain }
        return Style(foreground: stateColor(row) ?? .cyan)
    }

    static func stateStyle(_ row: DownloadRow, colors: Bool) -> Style {
        switch row.state {
        case .failed: return colors ? Style(foreground: .red, bold: true) : .bold
        case .done: return colors ? Style(foreground: .green) : .plain
        case .cancelled, .paused, .noSpace: return colors ? Style(foreground: stateColor(row)) : .dim
        default: return .plain
        }
    }

    private static func stateColor(_ row: DownloadRow) -> Color? {
        switch row.state {
        case .done: .green
        case .failed: .red
        case .paused, .noSpace: .yellow
        case .cancelled: .magenta
        case .scheduled: .blue
        case .queued, .connecting, .downloading: nil
        }
    }
}
