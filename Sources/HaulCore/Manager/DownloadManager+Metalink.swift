import FoundationEssentials

extension DownloadManager {
    /// What adds a followed metalink's files where the manager cannot alone: the service stores them first
    /// (the store gives their ids) and then queues them here (`add(_:ids:paused:)`). Given the metalink
    /// download's id and its planned files; answers the error the metalink download fails with (the files
    /// could not be stored), or nil once they are queued.
    package typealias MetalinkAdopter = @Sendable (DownloadID, MetalinkJobs.Planned) async -> HaulError?

    /// From now on a metalink a server answers with is followed, its files added by `adopter` (the service's
    /// queue, whatever `followsMetalinks` says).
    package func followMetalinks(through adopter: @escaping MetalinkAdopter) {
        metalinkAdopter = adopter
    }

    /// aria2's `--follow-metalink`: a download the server answered as a metalink (its `Content-Type`) is read
    /// (`Metalink.read`: at most 16 MiB, no entity, bounded) and the files it lists are queued, under the same
    /// options and output directory (a multi-file metalink's under one folder named after the document, which
    /// stays where it was saved), each `followedFrom` this download. Its own end is then taken here: false when
    /// there is nothing to follow (a file from a metalink is never followed again). A document that is not a
    /// usable metalink fails the download with its one line (exit 7, or the category of its problem); one
    /// that lists a file whose name is refused fails it with that line once the others are queued; else it is
    /// done, after its files are queued (the service's `adopter` first stores them: the download says done
    /// only once they are there, so whoever sees it done finds them).
    func followMetalink(_ id: DownloadID, _ entry: Entry, _ result: DownloadResult, seconds: Double) -> Bool {
        guard followsMetalinks || metalinkAdopter != nil, entry.job.followedFrom == nil,
              let type = result.contentType,
              let mediaType = type.split(separator: ";").first?.trimmingWhitespace().lowercased(),
              Metalink.mediaTypes.contains(mediaType)
        else { return false }
        var template = entry.job
        template.outputName = nil
        template.checksum = nil
        template.pieces = nil
        template.followedFrom = id
        let planned: MetalinkJobs.Planned
        switch MetalinkLoad.jobs(fromFile: result.path, template: template, locations: []) {
        case .success(let plan): planned = plan
        case .failure(let error):
            setState(id, .failed(HaulError(error.category == .usage ? .protocol : error.category, error.message)))
            return true
        }
        guard let adopter = metalinkAdopter else {
            _ = add(planned.jobs)
            followed(id, result, seconds: seconds, error: planned.refusal)
            return true
        }
        adopting.insert(id)
        Task { [self] in
            let error = await adopter(id, planned)
            adopted(id, result, seconds: seconds, error: error ?? planned.refusal)
        }
        return true
    }

    /// The adopter has queued (or failed to store) the files of metalink download `id`: it ends now.
    private func adopted(_ id: DownloadID, _ result: DownloadResult, seconds: Double, error: HaulError?) {
        adopting.remove(id)
        followed(id, result, seconds: seconds, error: error)
        startWaiting()
    }

    /// The metalink download's end once its files are queued: failed with `error`, else done (its hook runs).
    private func followed(_ id: DownloadID, _ result: DownloadResult, seconds: Double, error: HaulError?) {
        guard let entry = entries[id] else { return }
        if let error {
            setState(id, .failed(error))
        } else {
            succeeded(id, entry, result, seconds: seconds)
        }
    }
}
