import HaulCore

/// aria2's `follow-metalink=true` in the service: a download whose server answers with a metalink media type
/// ends once the files the document lists are stored and queued, one download each (`MetalinkJobs`: under one
/// folder named after the document when there are several, names confined to the output directory), each
/// `following` it and it `followedBy` them. They come to `ls`, the screens and the aria2 face through the same
/// roster and events as any added download, and the store keeps the link with each file's job.
extension Service {
    /// From now on the manager follows the metalinks servers answer with, through `adoptMetalinkFiles`.
    func followMetalinks() async {
        await manager.followMetalinks { [weak self] id, planned in
            guard let self else { return HaulError(.other, "the service ended before the metalink's files were added") }
            return await self.adoptMetalinkFiles(of: id, planned)
        }
    }

    /// Stores and queues the files of metalink download `id`; says each one refused (and what the document
    /// held that haul leaves out) in the service's log. The error its download fails with, or nil.
    func adoptMetalinkFiles(of id: DownloadID, _ planned: MetalinkJobs.Planned) async -> HaulError? {
        for line in planned.notes + planned.refused { ServiceRunner.log("haul service: download \(id): \(line)") }
        // A service stopped after storing them and before the metalink's "done" fetched the document again
        // after its restart: the files are in the queue already, and are not added twice.
        guard !planned.jobs.isEmpty, roster[id]?.followedBy.isEmpty ?? false else { return nil }
        do {
            // Stopping: they are stored and left as what the stop paused, which the next service continues.
            let stopping = endReason == .stopAsked
            let added = try await add(planned.jobs, paused: stopping, followedFrom: id)
            if stopping { pausedToStop += added.map(\.id) }
            return nil
        } catch {
            return HaulError(.fileIO, "cannot store the metalink's files: \(error.message)")
        }
    }
}
