import HaulCore
import HaulServiceClient

extension Service {

    /// `haul refresh ID URL`: the manager checks that `url` serves the download's file and continues it from its
    /// bytes on disk. Answered once the roster and the store hold what it changed.
    func refresh(_ id: DownloadID, to url: String) async -> Result<Wire.Refreshed, Wire.RefreshFailure> {
        guard roster.contains(id) else {
            return .failure(Wire.RefreshFailure(error: "no download with id \(id)", exitCode: FailureCategory.usage.exitCode))
        }
        let result = await manager.refresh(id, to: url)
        await settled()
        switch result {
        case .success(let kept):
            // The address `ls` shows is the one the download now comes from.
            if let job = await manager.job(of: id) {
                roster.modify(id) { $0.url = URLRedaction.masked(job.url) }
                if let problem = keep(job, of: id) { return .failure(problem) }
            }
            return .success(Wire.Refreshed(id: id, kept: kept))
        case .failure(let error):
            return .failure(Wire.RefreshFailure(error: error.message, exitCode: error.category.exitCode))
        }
    }
}
