import Glibc
import HaulCore

extension TorrentDownload {
    /// The files' names as libtorrent has them while the run goes on: which are renamed already.
    struct Names {
        var requested: Set<Int>
        var renamed: Set<Int>
        /// Checkpoints asked of libtorrent and not answered yet (each gets one alert).
        var pendingSaves = 0
    }

    /// Adds the torrent with its layout and runs it until every selected file is verified and renamed.
    func transfer(_ metadata: TorrentMetadata, resumed: TorrentMetadata?, layout: TorrentLayout,
                  iterator: inout AsyncStream<Input>.Iterator) async throws(HaulError) -> DownloadResult
    {
        let params = resumed ?? metadata
        params.setSavePath(directory)
        var names = Names(requested: [], renamed: [])
        for entry in layout.entries {
            params.rename(file: entry.index, to: entry.alreadyFinal ? entry.finalPath : entry.partPath)
            params.setPriority(file: entry.index, entry.selected ? 4 : 0)
            if entry.alreadyFinal {
                names.requested.insert(entry.index)
                names.renamed.insert(entry.index)
            }
        }
        let handle = try session.add(params)
        let path = FilePath.join(directory, layout.name)
        reporter.report(.started(id: id, url: job.label, file: layout.name, path: path, total: layout.selectedBytes))
        let fileCount = metadata.files.count
        let selected = layout.entries.filter(\.selected)
        var lastVerified: Int64 = 0
        var ticks = 0
        while !selected.allSatisfy({ names.renamed.contains($0.index) }) {
            guard let input = await iterator.next() else { throw HaulError(.other, "the torrent session ended") }
            switch input {
            case .alert(let alert) where handle.owns(alert):
                try await apply(alert, handle, key: metadata.key, layout: layout, files: fileCount, names: &names,
                                 iterator: &iterator)
            case .tick:
                guard let status = handle.status() else { continue }
                reporter.report(.progress(id: id, url: job.label, file: layout.name, DownloadProgress(
                    completed: status.verified, batchBytes: max(0, status.verified - lastVerified),
                    total: status.wanted, bytesPerSecond: Double(status.downloadRate))))
                lastVerified = status.verified
                // A checkpoint: a kill -9 or a power loss then costs at most the pieces of the last seconds.
                ticks += 1
                if ticks % Self.checkpointSeconds == 0, status.needsResumeSave, names.pendingSaves == 0 {
                    names.pendingSaves += 1
                    handle.saveResumeData()
                }
                if status.state == .finished || status.state == .seeding {
                    sweep(handle, layout: layout, files: fileCount, names: &names)
                }
            case .stop(let category):
                await saveResume(handle, key: metadata.key, layout: layout, names: names, iterator: &iterator)
                await remove(handle, iterator: &iterator)
                throw HaulError(category, "interrupted")
            case .alert, .timeout:
                continue
            }
        }
        let downloaded = handle.status()?.downloaded ?? 0
        unlink(resumePath(metadata.key))
        await seed(handle, file: layout.name, size: layout.selectedBytes, iterator: &iterator)
        await remove(handle, iterator: &iterator)
        return DownloadResult(file: layout.name, path: path, bytes: downloaded, skipped: false)
    }

    /// An alert about this torrent: a file verified is renamed, a rename noted, an error ends the run with
    /// the resume data saved (what is verified is kept).
    func apply(_ alert: TorrentAlert, _ handle: TorrentHandle, key: String, layout: TorrentLayout, files: Int, names: inout Names,
                iterator: inout AsyncStream<Input>.Iterator) async throws(HaulError)
    {
        switch alert.kind {
        case .fileCompleted, .checked, .finished:
            sweep(handle, layout: layout, files: files, names: &names)
        case .fileRenamed:
            if names.requested.contains(alert.index) { names.renamed.insert(alert.index) }
        case .resumeData:
            names.pendingSaves -= 1
            checkpoint(alert.data, key: key, layout: layout, names: names)
        case .resumeDataFailed:
            names.pendingSaves -= 1
        case .fileRenameFailed, .error, .fileError:
            let message = alert.diskFull ? "disk full (\(alert.message))" : alert.message
            await saveResume(handle, key: key, layout: layout, names: names, iterator: &iterator)
            await remove(handle, iterator: &iterator)
            throw HaulError(.fileIO, message)
        default:
            break
        }
    }

    /// Renames each selected file whose every piece passed its hash check (and was not renamed yet).
    func sweep(_ handle: TorrentHandle, layout: TorrentLayout, files: Int, names: inout Names) {
        let verified = handle.verifiedBytes(files: files)
        for entry in layout.entries where entry.selected && !names.requested.contains(entry.index) {
            guard entry.index < verified.count, verified[entry.index] >= entry.size else { continue }
            handle.rename(file: entry.index, to: entry.finalPath)
            names.requested.insert(entry.index)
        }
    }

    /// Sends the verified pieces to other peers until `job.seeding` says it is over (a ratio, a time), the run
    /// is stopped, or the torrent fails (its files are whole and named already: nothing of the download is
    /// lost). Time is counted in the run's ticks, one a second of its clock.
    func seed(_ handle: TorrentHandle, file: String, size: Int64, iterator: inout AsyncStream<Input>.Iterator) async {
        let seeding = job.seeding
        guard seeding.seeds else { return }
        reporter.report(.fact(id: id, url: job.label, file: file, .seeding(
            ratio: seeding.ratio, minutes: seeding.time.map { Self.seconds($0) / 60 })))
        // All it sent counts, as aria2 counts it: while it downloaded too.
        var uploaded = handle.status()?.uploaded ?? 0
        var seconds = 0
        func over() -> Bool { seeding.isOver(uploaded: uploaded, size: size, elapsed: .seconds(seconds)) }
        loop: while !over() {
            guard let input = await iterator.next() else { break }
            switch input {
            case .tick:
                seconds += 1
                if let status = handle.status() { uploaded = status.uploaded }
            case .alert(let alert) where handle.owns(alert) && (alert.kind == .error || alert.kind == .fileError):
                break loop
            case .stop:
                break loop
            case .alert, .timeout:
                continue
            }
        }
        if let status = handle.status() { uploaded = max(uploaded, status.uploaded) }
        reporter.report(.fact(id: id, url: job.label, file: file, .seeded(
            uploaded: uploaded, ratio: Double(uploaded) / Double(max(size, 1)))))
    }

    /// Seconds between checkpoints of a running torrent's resume data (when it changed).
    static let checkpointSeconds = 5

    /// Writes resume data libtorrent made while the torrent runs: the parts it names pieces of are synced
    /// first (a piece the data calls verified is on the disk before the data is), then the data replaces the
    /// last (written whole, synced, renamed). A failure leaves the last checkpoint.
    func checkpoint(_ data: [UInt8], key: String, layout: TorrentLayout, names: Names) {
        for entry in layout.entries where entry.selected && !names.renamed.contains(entry.index) {
            let fd = open(FilePath.join(directory, entry.partPath), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard fd >= 0 else { continue }
            fdatasync(fd)
            close(fd)
        }
        try? TorrentFiles.replace(resumePath(key), with: data)
    }

    /// Asks libtorrent for the torrent's resume data and writes it beside the files.
    /// A checkpoint asked before (`names.pendingSaves`) is answered first, then the paused torrent's data is
    /// asked for (one request at a time: libtorrent may answer two that overlap once). Each wait is bounded by
    /// `Self.answerSeconds` of ticks: the last checkpoint stays if libtorrent never answers.
    func saveResume(_ handle: TorrentHandle, key: String, layout: TorrentLayout, names: Names,
                    iterator: inout AsyncStream<Input>.Iterator) async {
        if names.pendingSaves > 0 { await awaitResumeData(handle, key: key, layout: layout, names: names, iterator: &iterator) }
        handle.pause()
        handle.saveResumeData()
        await awaitResumeData(handle, key: key, layout: layout, names: names, iterator: &iterator)
    }

    /// Seconds a stopping torrent waits for libtorrent's answer (resume data, its removal) before it goes on.
    static let answerSeconds = 30

    /// Waits for one answer to a resume data request and writes it (at most `answerSeconds`).
    func awaitResumeData(_ handle: TorrentHandle, key: String, layout: TorrentLayout, names: Names,
                         iterator: inout AsyncStream<Input>.Iterator) async {
        var ticks = 0
        while ticks < Self.answerSeconds, let input = await iterator.next() {
            switch input {
            case .tick:
                ticks += 1
            case .alert(let alert) where handle.owns(alert) && alert.kind == .resumeData:
                checkpoint(alert.data, key: key, layout: layout, names: names)
                return
            case .alert(let alert) where handle.owns(alert) && alert.kind == .resumeDataFailed:
                return
            default:
                continue
            }
        }
    }
}
