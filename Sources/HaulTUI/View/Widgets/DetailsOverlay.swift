import HaulCore

/// Enter in the downloads view: everything known about one download.
enum DetailsOverlay {
    static func lines(_ row: DownloadRow) -> [(String, Style)] {
        var lines: [(String, Style)] = [
            ("Name   " + row.name, .plain),
            ("URL    " + row.url, .plain),
            ("File   " + (row.path ?? "(not started)"), .plain),
            ("State  " + DownloadList.stateText(row), .bold),
            ("Bytes  " + DownloadList.bytesText(row) + " (" + DownloadList.percentText(row) + ")", .plain),
        ]
        if let category = row.record.category {
            // The category of the config file whose folder `File` is in.
            lines.insert(("Sorted into " + category + " (a category of the config file)", .plain), at: 3)
        }
        if row.state == .downloading {
            lines.append(("Speed  " + ByteFormat.rate(row.bytesPerSecond) + ", ETA " + DownloadList.etaText(row), .plain))
        }
        lines += sourceLines(row)
        lines.append(("Limit  " + (row.limit.map { ByteFormat.rate(Double($0)) } ?? "none")
                      + (row.state.isFinished ? "" : "  (+ and - change it)"), .plain))
        if let picture = row.picture {
            lines.append(("Image  " + picture, .plain))
        }
        if let seconds = row.seconds {
            lines.append(("Took   " + ByteFormat.duration(seconds: seconds), .plain))
        }
        if let fact = row.lastFact {
            lines.append(("Note   " + fact.sentence, .dim))
        }
        return lines
    }

    /// The most sources listed one a line; the rest are counted.
    static let shownSources = 8

    /// A download from several sources: one line each, what it is doing, what it brought and how fast, then
    /// where (the URL last, as the one that may not fit), and why it failed.
    static func sourceLines(_ row: DownloadRow) -> [(String, Style)] {
        let sources = row.record.sources
        var lines: [(String, Style)] = sources.prefix(shownSources).map { source in
            let speed = source.state == .active ? ByteFormat.rate(source.bytesPerSecond) : ""
            let text = "Source " + pad(source.state.rawValue, 8) + pad(ByteFormat.size(source.bytes), 10, right: true)
                + "  " + pad(speed, 11) + "  " + source.url + (source.reason.map { "  (\($0))" } ?? "")
            return (text, source.state == .failed || source.state == .dropped ? .dim : .plain)
        }
        if sources.count > shownSources {
            lines.append(("       and \(sources.count - shownSources) more", .dim))
        }
        return lines
    }

    private static func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let gap = String(repeating: " ", count: max(0, width - text.count))
        return right ? gap + text : text + gap
    }

    static func draw(_ id: DownloadID, _ state: AppState, glyphs: Glyphs, into canvas: inout Canvas) {
        guard let index = state.index(of: id) else { return }
        let lines = lines(state.rows[index])
        let box = Box.centered(width: 90, height: lines.count + 2, in: canvas.size)
        box.draw(title: "Download \(id)", glyphs: glyphs, into: &canvas)
        box.write(lines, glyphs: glyphs, into: &canvas)
    }
}
