import FoundationEssentials

extension DownloadManager {
    /// aria2's `--follow-metalink`: a download the server answered as a metalink (its `Content-Type`) is read
    /// (`Metalink.read`: at most 16 MiB, no entity, bounded) and the files it lists are queued, under the same
    /// options and output directory (a multi-file metalink's under one folder named after the document, which
    /// stays where it was saved). Nil when there is nothing to follow or it was followed; the error of a
    /// document that is not a usable metalink, or that lists a file whose name is refused (the others are
    /// queued), which the document's download then fails with.
    func followMetalink(_ id: DownloadID, _ job: DownloadJob, _ result: DownloadResult) -> HaulError? {
        guard followsMetalinks, !fromMetalinks.contains(id), let type = result.contentType,
              let mediaType = type.split(separator: ";").first?.trimmingWhitespace().lowercased(),
              Metalink.mediaTypes.contains(mediaType)
        else { return nil }
        var template = job
        template.outputName = nil
        template.checksum = nil
        template.pieces = nil
        let planned: MetalinkJobs.Planned
        switch MetalinkLoad.jobs(fromFile: result.path, template: template, locations: []) {
        case .success(let plan): planned = plan
        case .failure(let error):
            return HaulError(error.category == .usage ? .protocol : error.category, error.message)
        }
        fromMetalinks.formUnion(add(planned.jobs))
        guard let first = planned.refused.first else { return nil }
        let others = planned.refused.count > 1 ? " (and \(planned.refused.count - 1) more)" : ""
        return HaulError(.protocol, first + others)
    }
}
