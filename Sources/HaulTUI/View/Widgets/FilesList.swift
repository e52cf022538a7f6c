import HaulCore

/// The files view: the server's status line, then `/files/list` (name, size, date) with the progress of
/// the latest download of each file.
enum FilesList {
    struct Columns: Equatable {
        var name = 0, size = 10, date = 0, progress = 0

        init(width: Int) {
            let available = width - 1
            if available >= 70 {
                date = 16
                progress = min(40, (available - size - date - 3) / 2)
            } else if available >= 40 {
                progress = (available - size - 2) / 2
            }
            let used = [size, date, progress].filter { $0 > 0 }.reduce(0) { $0 + $1 + 1 }
            name = max(1, available - used)
        }
    }

    /// The server's status line, into a one-row area.
    static func drawStatus(_ files: FilesPane, glyphs: Glyphs, into canvas: inout Canvas) {
        let line: String
        switch files.listing {
        case .notConfigured: line = "No server. Start haul with --server URL or --demo."
        case .loading: line = files.status ?? "Loading \(files.server ?? "")\(glyphs.ellipsis)"
        case .loaded, .failed: line = files.status ?? files.server ?? ""
        }
        canvas.put(" " + Text.truncated(line, to: canvas.width - 1, ellipsis: glyphs.ellipsis), x: 0, y: 0, style: .dim)
    }

    /// The column headings, into a one-row area as wide as the list.
    static func drawHeadings(into canvas: inout Canvas) {
        let columns = Columns(width: canvas.width)
        var x = 1
        for (title, width, right) in [("NAME", columns.name, false), ("SIZE", columns.size, true),
                                      ("DATE", columns.date, false), ("DOWNLOAD", columns.progress, false)]
        where width > 0 {
            canvas.put(right ? Text.right(title, width) : Text.left(title, width), x: x, y: 0, limit: width, style: .bold)
            x += width + 1
        }
    }

    /// The files with their downloads' progress, scrolled so the selection shows, into the list's area.
    static func draw(_ state: AppState, glyphs: Glyphs, into canvas: inout Canvas) {
        let files = state.files
        let columns = Columns(width: canvas.width)
        guard canvas.height > 0 else { return }
        let entries = files.entries
        if entries.isEmpty {
            let text: String
            switch files.listing {
            case .notConfigured: text = "Start haul with --server URL or --demo to browse a server."
            case .loading: text = "Loading the file list\(glyphs.ellipsis)"
            case .failed(let message): text = "Cannot list files: \(message)"
            case .loaded: text = "The server lists no files."
            }
            canvas.put(Text.truncated(text, to: canvas.width - 2, ellipsis: glyphs.ellipsis), x: 2, y: 0,
                     style: .dim)
            return
        }
        let offset = Layout.scrollOffset(selection: files.selection, count: entries.count, height: canvas.height)
        for (line, index) in (offset..<min(entries.count, offset + canvas.height)).enumerated() {
            let file = entries[index]
            // Rows hold URLs as shown: password masked.
            let url = files.server.map { URLRedaction.masked(FilesAddress.download(server: $0, name: file.name)) }
            let download = state.rows.last { $0.url == url }
            drawRow(file, download: download, selected: index == files.selection, columns: columns,
                    y: line, state: state, glyphs: glyphs, into: &canvas)
        }
    }

    private static func drawRow(_ file: RemoteFile, download: DownloadRow?, selected: Bool, columns: Columns, y: Int,
                                state: AppState, glyphs: Glyphs, into canvas: inout Canvas) {
        canvas.put(selected ? String(glyphs.marker) : " ", x: 0, y: y, style: .bold)
        var x = 1
        canvas.put(Text.truncatedMiddle(file.name, to: columns.name, ellipsis: glyphs.ellipsis), x: x, y: y,
                 limit: columns.name)
        x += columns.name + 1
        canvas.put(Text.right(ByteFormat.size(file.size), columns.size), x: x, y: y, limit: columns.size)
        x += columns.size + 1
        if columns.date > 0 {
            canvas.put(Text.left(displayDate(file.date), columns.date), x: x, y: y, limit: columns.date, style: .dim)
            x += columns.date + 1
        }
        if columns.progress > 0, let download {
            let label = DownloadList.percentText(download) + " " + DownloadList.stateText(download)
            let barWidth = max(0, columns.progress - min(columns.progress, 18))
            if barWidth >= 4 {
                ProgressBar.draw(download.fraction, x: x, y: y, width: barWidth,
                                 style: DownloadList.barStyle(download, colors: state.colors), glyphs: glyphs,
                                 into: &canvas)
                x += barWidth + 1
            }
            let room = columns.progress - (barWidth >= 4 ? barWidth + 1 : 0)
            canvas.put(Text.truncated(label, to: room, ellipsis: glyphs.ellipsis), x: x, y: y, limit: room,
                     style: DownloadList.stateStyle(download, colors: state.colors))
        }
        if selected {
            canvas.restyle(x: 0, y: y, count: canvas.width) { $0.reverse = true }
        }
    }

    /// "2025-01-31T12:00:00Z" shown as "2025-01-31 12:00".
    static func displayDate(_ iso: String) -> String {
        let characters = Array(iso.prefix(16))
        guard characters.count == 16, characters[10] == "T" else { return iso }
        var shown = characters
        shown[10] = " "
        return String(shown)
    }
}
