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

    static func draw(_ state: AppState, layout: Layout, glyphs: Glyphs, into grid: inout Grid) {
        let files = state.files
        if let y = layout.status {
            let line: String
            switch files.listing {
            case .notConfigured: line = "No server. Start haul with --server URL or --demo."
            case .loading: line = files.status ?? "Loading \(files.server ?? "")\(glyphs.ellipsis)"
            case .loaded, .failed: line = files.status ?? files.server ?? ""
            }
            grid.put(" " + Text.truncated(line, to: grid.width - 1, ellipsis: glyphs.ellipsis), x: 0, y: y,
                     style: .dim)
        }
        let columns = Columns(width: grid.width)
        if let y = layout.headings {
            var x = 1
            for (title, width, right) in [("NAME", columns.name, false), ("SIZE", columns.size, true),
                                          ("DATE", columns.date, false), ("DOWNLOAD", columns.progress, false)]
            where width > 0 {
                grid.put(right ? Text.right(title, width) : Text.left(title, width), x: x, y: y, limit: width,
                         style: .bold)
                x += width + 1
            }
        }
        guard layout.listHeight > 0 else { return }
        let entries = files.entries
        if entries.isEmpty {
            let text: String
            switch files.listing {
            case .notConfigured: text = "Start haul with --server URL or --demo to browse a server."
            case .loading: text = "Loading the file list\(glyphs.ellipsis)"
            case .failed(let message): text = "Cannot list files: \(message)"
            case .loaded: text = "The server lists no files."
            }
            grid.put(Text.truncated(text, to: grid.width - 2, ellipsis: glyphs.ellipsis), x: 2, y: layout.listTop,
                     style: .dim)
            return
        }
        let offset = Layout.scrollOffset(selection: files.selection, count: entries.count, height: layout.listHeight)
        for (line, index) in (offset..<min(entries.count, offset + layout.listHeight)).enumerated() {
            let file = entries[index]
            // Rows hold URLs as shown: password masked.
            let url = files.server.map { URLRedaction.masked(FilesAddress.download(server: $0, name: file.name)) }
            let download = state.rows.last { $0.url == url }
            drawRow(file, download: download, selected: index == files.selection, columns: columns,
                    y: layout.listTop + line, state: state, glyphs: glyphs, into: &grid)
        }
    }

    private static func drawRow(_ file: RemoteFile, download: DownloadRow?, selected: Bool, columns: Columns, y: Int,
                                state: AppState, glyphs: Glyphs, into grid: inout Grid) {
        grid.put(selected ? String(glyphs.marker) : " ", x: 0, y: y, style: .bold)
        var x = 1
        grid.put(Text.truncatedMiddle(file.name, to: columns.name, ellipsis: glyphs.ellipsis), x: x, y: y,
                 limit: columns.name)
        x += columns.name + 1
        grid.put(Text.right(ByteFormat.size(file.size), columns.size), x: x, y: y, limit: columns.size)
        x += columns.size + 1
        if columns.date > 0 {
            grid.put(Text.left(displayDate(file.date), columns.date), x: x, y: y, limit: columns.date, style: .dim)
            x += columns.date + 1
        }
        if columns.progress > 0, let download {
            let label = DownloadList.percentText(download) + " " + DownloadList.stateText(download)
            let barWidth = max(0, columns.progress - min(columns.progress, 18))
            if barWidth >= 4 {
                ProgressBar.draw(download.fraction, x: x, y: y, width: barWidth,
                                 style: DownloadList.barStyle(download, colors: state.colors), glyphs: glyphs,
                                 into: &grid)
                x += barWidth + 1
            }
            let room = columns.progress - (barWidth >= 4 ? barWidth + 1 : 0)
            grid.put(Text.truncated(label, to: room, ellipsis: glyphs.ellipsis), x: x, y: y, limit: room,
                     style: DownloadList.stateStyle(download, colors: state.colors))
        }
        if selected {
            grid.restyle(x: 0, y: y, count: grid.width) { $0.reverse = true }
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
