extension DownloadManager {
    /// `rm --files`: stops the download if it runs, is queued or paused (cancelled, so nothing restarts it),
    /// waits until its task has let go of the part (a cancelled picture's preview is written by then), then
    /// deletes what `known` shows haul wrote for it (`OwnFiles`). Its row stays, saying "removed with files"
    /// (a `.filesRemoved` fact). nil for an unknown id.
    package func removeFiles(_ id: DownloadID, _ known: OwnFiles.Known?) async -> OwnFiles.Outcome? {
        guard let entry = entries[id] else { return nil }
        if !entry.state.isFinished || entry.state == .paused {
            stop(id, as: .cancelled)
        }
        if let task = running[id] { await task.value }
        let outcome = known.map { known in IOExecutor.blocking { OwnFiles.remove(known) } } ?? OwnFiles.Outcome()
        guard entries[id] != nil else { return outcome }
        continuation.yield(.fact(id: id, .filesRemoved(files: outcome.removed.count, bytes: outcome.bytes)))
        return outcome
    }
}
