import HaulCore
import HaulServiceClient

extension Service {
    /// `rm --files`: deletes what haul wrote for the selected downloads (`OwnFiles`), stopping first those that
    /// run, wait or are paused. Their rows stay, saying "removed with files". Unknown ids: nothing is done, and
    /// they are named. What could not be deleted is in the answer; the rest goes on.
    func removeFiles(_ selection: Wire.Selection) async -> Result<Wire.FilesRemoval, Wire.Failure> {
        let ids: [DownloadID]
        if selection.all == true {
            ids = roster.order
        } else {
            let asked = selection.ids ?? []
            let unknown = asked.filter { !roster.contains($0) }
            guard unknown.isEmpty else {
                let names = unknown.map(String.init).joined(separator: ", ")
                return .failure(Wire.Failure(error: "no download with id \(names)", unknown: unknown))
            }
            ids = asked
        }
        // Stopped, and their tasks ended, before anything is judged: the part's identity (`started`) and a
        // cancelled picture's preview are known only once the roster has every event of the run.
        for id in ids where roster[id].map({ !$0.state.isFinished || $0.state == .paused }) == true {
            await manager.cancel(id)
        }
        await manager.waitUntilStopped(ids)
        await settled()
        var removal = Wire.FilesRemoval(ids: ids)
        for id in ids {
            let known = roster[id].flatMap { entry in entry.path.map {
                OwnFiles.Known(path: $0, part: entry.part, size: entry.state == .done ? entry.record.total : nil)
            } }
            if let outcome = await manager.removeFiles(id, known) { removal.add(outcome, of: id) }
        }
        await settled()
        return .success(removal)
    }
}
