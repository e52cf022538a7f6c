import NIOConcurrencyHelpers

extension DownloadManager {
    /// The download itself, outside the actor: events go straight to the stream. Also returns the path
    /// the download claimed, so that a resume or retry continues the same `.part`.
    static func perform(_ job: DownloadJob, id: DownloadID, continuing: Bool, alone: Bool,
                        downloader: Downloader, events: EventSink, gate: StopGate,
                        beforeDownloading: (@Sendable (DownloadID) -> Void)?,
                        namingGate: (@Sendable (Int) async -> Void)?,
                        transferEnded: @escaping @Sendable () async -> Bool)
        async -> (Result<DownloadResult, HaulError>, String?)
    {
        if job.torrent != nil {
            return await performTorrent(job, id: id, downloader: downloader, events: events, gate: gate,
                                        beforeDownloading: beforeDownloading)
        }
        if let problem = URLCheck.problem(with: job.url) { return (.failure(HaulError(.usage, problem)), nil) }
        // The room it still needs, held from its check to its end and lessened as its bytes come.
        let ticket = downloader.room.ticket()
        defer { ticket.release() }
        var downloading = false
        var claimed: String?
        // The count of events up to this download's latest `started`: only with a naming gate (the service's).
        let startedMark = namingGate == nil ? nil : NIOLockedValueBox<Int?>(nil)
        var beforeNaming: (@Sendable () async -> Void)?
        if let namingGate, let startedMark {
            beforeNaming = {
                let mark = startedMark.withLockedValue { $0 }
                if let mark { await namingGate(mark) }
            }
        }
        do {
            return (.success(try await downloader.download(job, continuing: continuing, alone: alone, ticket: ticket,
                                                           transferEnded: transferEnded,
                                                           beforeNaming: beforeNaming) { event in
                switch event {
                case .started(let file, let path, let total, let part):
                    claimed = path
                    events.yield(.started(id: id, file: file, path: path, total: total, part: part))
                    if let startedMark {
                        let count = events.yielded.withLockedValue { $0 }
                        startedMark.withLockedValue { $0 = count }
                    }
                case .progress(let progress):
                    ticket.progress(completed: progress.completed)
                    if !downloading {
                        downloading = true
                        beforeDownloading?(id)
                        gate.unlessStopped { events.yield(.state(id: id, .downloading)) }
                    }
                    events.yield(.progress(id: id, progress))
                case .fact(let fact):
                    events.yield(.fact(id: id, fact))
                case .sources(let sources):
                    events.yield(.sources(id: id, sources))
                }
            }), claimed)
        } catch {
            return (.failure(error), claimed)
        }
    }

    /// A torrent's job, by the torrent engine: its events as an HTTP download's; no room is held for it (its
    /// size is known only once a magnet's metadata came), and its files take their names as libtorrent
    /// verifies them.
    static func performTorrent(_ job: DownloadJob, id: DownloadID, downloader: Downloader, events: EventSink,
                               gate: StopGate, beforeDownloading: (@Sendable (DownloadID) -> Void)?)
        async -> (Result<DownloadResult, HaulError>, String?)
    {
        guard let engine = downloader.torrents else {
            return (.failure(HaulError(.usage, "torrents and magnets are not run here")), nil)
        }
        let state = NIOLockedValueBox<(claimed: String?, downloading: Bool)>((nil, false))
        let result = await engine.download(job) { event in
            switch event {
            case .started(let file, let path, let total, let part):
                state.withLockedValue { $0.claimed = path }
                events.yield(.started(id: id, file: file, path: path, total: total, part: part))
            case .progress(let progress):
                let first = state.withLockedValue { state in
                    defer { state.downloading = true }
                    return !state.downloading
                }
                if first {
                    beforeDownloading?(id)
                    gate.unlessStopped { events.yield(.state(id: id, .downloading)) }
                }
                events.yield(.progress(id: id, progress))
            case .fact(let fact):
                events.yield(.fact(id: id, fact))
            case .sources(let sources):
                events.yield(.sources(id: id, sources))
            }
        }
        return (result, state.withLockedValue { $0.claimed })
    }
}
