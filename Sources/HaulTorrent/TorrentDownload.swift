import Glibc
import HaulCore
import NIOConcurrencyHelpers

/// One torrent or magnet downloaded in a session, reported as an HTTP download is (`ReportEvent`): a magnet's
/// metadata is fetched first (the torrent in upload mode, so nothing is written), then the torrent is added
/// again with every file's name decided by `TorrentLayout` (`NAME.part` until all of its pieces passed their
/// hash check, then renamed to `NAME`), and the run ends when every selected file has its final name.
/// Stopped (`stop`), it saves libtorrent's resume data beside the files (`haul-HASH.part.resume`, as an HTTP
/// download keeps `NAME.part.json`) and the next run starts from it. The session's alerts are this download's
/// alone while it runs.
package final class TorrentDownload: Sendable {
    enum Input: Sendable {
        case alert(TorrentAlert)
        case tick
        case timeout
        case stop(FailureCategory)
    }

    let session: TorrentSession
    let job: TorrentJob
    let id: Int
    let reporter: any Reporter
    let inputs: AsyncStream<Input>
    let continuation: AsyncStream<Input>.Continuation
    let directory: String

    package init(session: TorrentSession, job: TorrentJob, id: Int, reporter: any Reporter) {
        self.session = session
        self.job = job
        self.id = id
        self.reporter = reporter
        directory = FilePath.absolute(job.directory)
        (inputs, continuation) = AsyncStream.makeStream(of: Input.self)
    }

    /// Stops the run (a signal): it saves its resume data and ends with `category`'s "interrupted".
    package func stop(_ category: FailureCategory) { continuation.yield(.stop(category)) }

    /// Runs the download to its end; progress once a second by `clock`.
    package func run<C: Clock>(clock: C) async -> Result<DownloadResult, HaulError> where C.Duration == Duration {
        let start = clock.now
        let alerts = session.subscribe()
        let forward = Task { [continuation] in
            for await alert in alerts { continuation.yield(.alert(alert)) }
        }
        let ticker = Task { [continuation] in
            while (try? await clock.sleep(for: .seconds(1))) != nil { continuation.yield(.tick) }
        }
        defer {
            forward.cancel()
            ticker.cancel()
        }
        var iterator = inputs.makeAsyncIterator()
        var name = Self.displayName(job)
        do throws(HaulError) {
            try TorrentFiles.makeDirectory(directory)
            let (metadata, resumed) = try await load(clock: clock, iterator: &iterator)
            let layout = try plan(metadata, resumed: resumed)
            name = layout.name
            var result = try await transfer(metadata, resumed: resumed, layout: layout, iterator: &iterator)
            result.file = layout.name
            reporter.report(.done(id: id, url: job.label, result: result, seconds: Self.seconds(start.duration(to: clock.now))))
            return .success(result)
        } catch {
            reporter.report(.failed(id: id, url: job.label, file: name, error: error))
            return .failure(error)
        }
    }

    package static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// What the lines call the download before its metadata is known.
    static func displayName(_ job: TorrentJob) -> String {
        switch job.source {
        case .file(let path): FileNaming.sanitize(FilePath.baseName(of: path))
        case .metainfo(_, let name): FileNaming.sanitize(FilePath.baseName(of: name))
        case .magnet: "magnet"
        }
    }

    /// Resume data of a stopped run, named by the torrent's info-hash.
    func resumePath(_ key: String) -> String { FilePath.join(directory, "haul-\(key).part.resume") }

    /// The metadata (a magnet's fetched from the peers), and the resume data a stopped run left, when it is
    /// of this torrent and holds its metadata.
    func load<C: Clock>(clock: C, iterator: inout AsyncStream<Input>.Iterator) async throws(HaulError)
        -> (TorrentMetadata, TorrentMetadata?) where C.Duration == Duration
    {
        let metadata: TorrentMetadata
        switch job.source {
        case .file(let path):
            let bytes = try TorrentFiles.read(path, limit: TorrentMetadata.maxTorrentBytes)
            metadata = try TorrentMetadata.parse(torrent: bytes)
        case .metainfo(let bytes, _):
            metadata = try TorrentMetadata.parse(torrent: bytes)
        case .magnet(let link):
            metadata = try TorrentMetadata.parse(magnet: link)
        }
        for tracker in job.trackers { metadata.addTracker(tracker) }
        let resumed = job.resume ? TorrentFiles.readIfPresent(resumePath(metadata.key), limit: 256 << 20)
            .flatMap(TorrentMetadata.parse(resume:))
            .flatMap { $0.hasMetadata && $0.key == metadata.key ? $0 : nil } : nil
        if !metadata.hasMetadata {
            if let resumed {
                metadata.takeMetadata(of: resumed)
            } else {
                metadata.takeMetadata(of: try await fetchMetadata(metadata, clock: clock, iterator: &iterator))
            }
        }
        return (metadata, resumed)
    }

    /// A magnet's metadata, from its peers: added in upload mode (no piece is asked for, nothing written),
    /// taken out once the metadata came. Fails after `job.metadataTimeout` (exit 4).
    func fetchMetadata<C: Clock>(_ magnet: TorrentMetadata, clock: C, iterator: inout AsyncStream<Input>.Iterator)
        async throws(HaulError) -> TorrentMetadata where C.Duration == Duration
    {
        magnet.setSavePath(directory)
        magnet.setUploadMode(true)
        let handle = try session.add(magnet)
        magnet.setUploadMode(false)
        let timeout = Task { [continuation, job] in
            if (try? await clock.sleep(for: job.metadataTimeout)) != nil { continuation.yield(.timeout) }
        }
        defer { timeout.cancel() }
        while let input = await iterator.next() {
            switch input {
            case .alert(let alert) where handle.owns(alert) && alert.kind == .metadataReceived:
                guard let metadata = handle.metadata() else { continue }
                await remove(handle, iterator: &iterator)
                return metadata
            case .timeout:
                await remove(handle, iterator: &iterator)
                let seconds = Int(Self.seconds(job.metadataTimeout).rounded())
                throw HaulError(.network, "no metadata after \(seconds) s: no peer sent the magnet's file list (--bt-metadata-timeout)")
            case .stop(let category):
                await remove(handle, iterator: &iterator)
                throw HaulError(category, "interrupted")
            case .alert, .tick:
                continue
            }
        }
        throw HaulError(.other, "the torrent session ended")
    }

    /// Takes the torrent out of the session and waits until it is (the same torrent can then be added again).
    /// The removal is matched by info-hash: libtorrent's id for a handle is its object's address, 0 once the
    /// torrent is freed, so an id read after the removal never matched the alert's (runs hung, now and then).
    func remove(_ handle: TorrentHandle, iterator: inout AsyncStream<Input>.Iterator) async {
        session.remove(handle)
        var ticks = 0
        while ticks < Self.answerSeconds, let input = await iterator.next() {
            if case .tick = input { ticks += 1 }
            if case .alert(let alert) = input, alert.kind == .removed, handle.owns(alert) {
                return
            }
        }
    }

    /// Where each file goes: as the resume data had it when every name there is one haul gives, else anew.
    func plan(_ metadata: TorrentMetadata, resumed: TorrentMetadata?) throws(HaulError) -> TorrentLayout {
        let files = metadata.files
        if let selection = job.selection, let highest = selection.ranges.map(\.upperBound).max(), highest > files.count {
            throw HaulError(.usage, "--select-file \(highest): the torrent has \(files.count) file\(files.count == 1 ? "" : "s")")
        }
        if let resumed, let layout = TorrentLayout(resumed: resumed, files: files, name: metadata.name, selection: job.selection) {
            return layout
        }
        let directory = self.directory
        let layout = TorrentLayout(files: files, name: metadata.name, selection: job.selection) {
            TorrentFiles.exists($0, in: directory)
        }
        guard layout.entries.contains(where: \.selected) else {
            throw HaulError(.usage, "--select-file selects none of the torrent's files")
        }
        return layout
    }
}
