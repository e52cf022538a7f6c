/// What happens to a download, in order per download: what the engine tells its front ends, what the service
/// keeps and sends to its clients, and what `DownloadRecord.apply` reads. One type from the engine to the
/// screen: the service sends these events as they are (`ManagerEvent+Wire.swift`) and its clients read them
/// back into this type.
package enum ManagerEvent: Sendable, Equatable {
    /// `url` is as it may be shown: its password masked.
    case added(id: DownloadID, url: String, file: String)
    case state(id: DownloadID, DownloadState)
    /// The server answered and the file is named; bytes go to `path + ".part"`, the file `part` names
    /// (device and inode: after its rename, `path` is that file only if it still has them).
    case started(id: DownloadID, file: String, path: String, total: Int64?, part: String? = nil)
    case progress(id: DownloadID, DownloadProgress)
    /// Something that happened to the download and did not stop it.
    case fact(id: DownloadID, DownloadFact)
    /// What each of its sources is doing and has brought (a download from several sources reports them as they
    /// change, and about once a second while bytes come).
    case sources(id: DownloadID, [SourceStatus])
    case finished(id: DownloadID, DownloadResult, seconds: Double)
    case removed(id: DownloadID)
    /// A waiting (queued or paused) download was moved: it now sits at `position` (from 0) of the waiting queue,
    /// the order in which queued downloads start (`QueueOrder`).
    case moved(id: DownloadID, position: Int)

    /// The download it is about.
    package var downloadID: DownloadID {
        switch self {
        case .added(let id, _, _), .state(let id, _), .started(let id, _, _, _, _), .progress(let id, _),
            .fact(let id, _), .sources(let id, _), .finished(let id, _, _), .removed(let id),
            .moved(let id, _):
            id
        }
    }
}

/// What a stream of a service's events brings, in order: runs of events (each what one read brought), and the
/// mark where the snapshot of what the service holds ends and what happens now begins.
package enum EventFeed: Sendable, Equatable {
    case events([ManagerEvent])
    /// The snapshot is whole: the events so far are what the service holds; the rest happen now.
    case live
}
