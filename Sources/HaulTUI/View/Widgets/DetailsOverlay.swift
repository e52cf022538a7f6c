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
        if row.state == .downloading {
            lines.append(("Speed  " + ByteFormat.rate(row.bytesPerSecond) + ", ETA " + DownloadList.etaText(row), .plain))
        }
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

    static func draw(_ id: DownloadID, _ state: AppState, glyphs: Glyphs, into canvas: inout Canvas) {
        guard let index = state.index(of: id) else { return }
        let lines = lines(state.rows[index])
        let box = Box.centered(width: 90, height: lines.count + 2, in: canvas.size)
        box.draw(title: "Download \(id)", glyphs: glyphs, into: &canvas)
        box.write(lines, glyphs: glyphs, into: &canvas)
    }
}
