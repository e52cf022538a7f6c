import HaulCore

/// `D`: what deleting the selected download's files takes, named before anything goes: the files haul wrote
/// for it as far as the screen knows them (the file, or its part with the state beside it, and a preview),
/// how many and how big, and that a running download is stopped first.
enum ConfirmRemoveFilesOverlay {
    static func draw(_ state: AppState, _ id: DownloadID, glyphs: Glyphs, into canvas: inout Canvas) {
        guard let row = state.rows.first(where: { $0.id == id }) else { return }
        let files = names(row)
        let bytes = row.state == .done ? (row.record.total ?? row.record.completed) : row.record.completed
        var lines: [(String, Style)] = []
        if files.isEmpty {
            lines.append(("haul knows of no file it wrote for download \(id).", .plain))
        } else {
            lines.append(("Delete \(files.count == 1 ? "this file" : "these \(files.count) files") (\(ByteFormat.size(bytes)))?", .plain))
            for name in files.prefix(4) { lines.append(("  " + name, .plain)) }
        }
        if !row.state.isFinished || row.state == .paused { lines.append(("The download is cancelled first.", .plain)) }
        lines.append(("Files haul did not write stay.", .dim))
        lines.append(("y delete   n keep", .bold))
        let box = Box.centered(width: 60, height: lines.count + 2, in: canvas.size)
        box.draw(title: "Delete the files of \(row.record.name)?", glyphs: glyphs, into: &canvas)
        box.write(lines, glyphs: glyphs, into: &canvas)
    }

    /// The names that go: the finished file, or the part and its state; a preview saved of it.
    static func names(_ row: DownloadRow) -> [String] {
        guard let path = row.record.path, row.record.part != nil, row.record.filesRemoved == nil else { return [] }
        let name = FilePath.baseName(of: path)
        var names = row.state == .done ? [name] : [name + ".part", name + ".part.json"]
        if let preview = row.previewPath { names.append(FilePath.baseName(of: preview)) }
        return names
    }
}

/// The footer's line once `D` has been carried out.
enum FilesRemovedLine {
    static func text(_ outcome: OwnFiles.Outcome?) -> String {
        guard let outcome else { return "Could not delete the files: the download is gone" }
        if let failed = outcome.failed.first { return "Cannot delete \(failed.path): \(failed.reason)" }
        var line = "Deleted \(outcome.removed.count) file\(outcome.removed.count == 1 ? "" : "s") (\(ByteFormat.size(outcome.bytes)))"
        if let left = outcome.left.first { line += "; left \(FilePath.baseName(of: left.path)): \(left.reason)" }
        return line
    }
}
