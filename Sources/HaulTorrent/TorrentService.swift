import HaulCore
import NIOConcurrencyHelpers

/// The queue's torrent engine (`Downloader.torrents`): one libtorrent session for all of a process's torrents,
/// started with the first of them (no port is opened for a queue of HTTP downloads), closed by `close()`.
/// Each job runs as a `TorrentDownload` in it; cancelling the job's task stops the download with its resume
/// data saved.
package final class TorrentService: TorrentEngine {
    private let options: TorrentSessionOptions
    private let session = NIOLockedValueBox<TorrentSession?>(nil)
    private let counter = NIOLockedValueBox(0)

    package init(options: TorrentSessionOptions) {
        self.options = options
    }

    /// The session, started on first use.
    private func started() throws(HaulError) -> TorrentSession {
        let made: Result<TorrentSession, HaulError> = session.withLockedValue { session in
            if let session { return .success(session) }
            do throws(HaulError) {
                let new = try TorrentSession(options)
                session = new
                return .success(new)
            } catch {
                return .failure(error)
            }
        }
        return try made.get()
    }

    /// The port the session listens on, 0 when none runs.
    package var listenPort: Int { session.withLockedValue { $0?.listenPort ?? 0 } }

    package func download(_ job: DownloadJob, events: @escaping @Sendable (DownloadEvent) -> Void) async
        -> Result<DownloadResult, HaulError>
    {
        let torrentJob: TorrentJob
        let session: TorrentSession
        do throws(HaulError) {
            torrentJob = try Self.torrentJob(job)
            session = try started()
        } catch {
            return .failure(error)
        }
        let id = counter.withLockedValue { count in
            count += 1
            return count
        }
        let download = TorrentDownload(session: session, job: torrentJob, id: id, reporter: EventReporter(events: events))
        // In a task of its own: a cancelled task's streams end at once (AsyncStream's next() returns nil), and the
        // download must go on reading its alerts to save its resume data and leave the session.
        let run = Task { await download.run(clock: ContinuousClock()) }
        return await withTaskCancellationHandler {
            await run.value
        } onCancel: {
            download.stop(.cancelled)
        }
    }

    /// Stops the session (each download stopped before, by its task).
    package func close() async {
        let open = session.withLockedValue { session in
            defer { session = nil }
            return session
        }
        await open?.close()
    }

    /// The torrent job a queue's job describes.
    static func torrentJob(_ job: DownloadJob) throws(HaulError) -> TorrentJob {
        guard let spec = job.torrent else { throw HaulError(.usage, "not a torrent") }
        let source: TorrentJob.Source
        if let magnet = spec.magnet {
            source = .magnet(magnet)
        } else if let bytes = spec.metainfo {
            source = .metainfo(bytes, name: job.url)
        } else {
            throw HaulError(.fileIO, "\(job.url): the .torrent file could not be read when it was added")
        }
        var torrentJob = TorrentJob(source: source, directory: job.outputDirectory)
        if let selection = spec.selection {
            switch FileSelection.parse(selection) {
            case .success(let parsed): torrentJob.selection = parsed
            case .failure(let error): throw error
            }
        }
        torrentJob.trackers = spec.trackers
        torrentJob.resume = job.resume
        torrentJob.seeding = TorrentJob.Seeding.given(ratio: spec.seedRatio, minutes: spec.seedMinutes)
        if let seconds = spec.metadataTimeout { torrentJob.metadataTimeout = .milliseconds(Int64(seconds * 1000)) }
        return torrentJob
    }
}

/// A torrent download's reports as a queue's download events.
struct EventReporter: Reporter {
    let events: @Sendable (DownloadEvent) -> Void

    func report(_ event: ReportEvent) {
        switch event {
        case .started(_, _, let file, let path, let total):
            events(.started(file: file, path: path, total: total, part: nil))
        case .progress(_, _, _, let progress):
            events(.progress(progress))
        case .fact(_, _, _, let fact):
            events(.fact(fact))
        case .done, .failed, .summary:
            break
        }
    }
}
