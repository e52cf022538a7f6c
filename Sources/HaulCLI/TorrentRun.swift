import Glibc
import HaulCore
import HaulTorrent
import NIOConcurrencyHelpers

/// `haul FILE.torrent` and `haul 'magnet:?...'` in a line run: one libtorrent session in this process, the
/// torrents one after the other, on the reporter HTTP downloads use. (The service's queue, the full screen
/// and aria2's addTorrent take torrents in a later step.)
enum TorrentRun {
    /// The command line's torrents and magnets; nil when it names none.
    static func sources(_ command: HaulCommand) -> [TorrentJob.Source]? {
        let sources = command.urls.compactMap(TorrentJob.source(of:))
        return sources.isEmpty ? nil : sources
    }

    static func run(_ command: HaulCommand, sources: [TorrentJob.Source]) async -> Int32 {
        if sources.count != command.urls.count || command.inputFile != nil || !command.metalink.isEmpty || command.demo {
            TextOutput.standard.err("haul: torrents and magnets are downloaded on their own for now: give them without URLs, -i or metalinks")
            return FailureCategory.usage.exitCode
        }
        let clock = ContinuousClock()
        let start = clock.now
        let reporter: any Reporter = command.json
            ? JSONReporter() : PlainReporter(quiet: command.quiet, clock: MomentClock(clock))
        let session: TorrentSession
        do throws(HaulError) {
            session = try TorrentSession(command.torrent.sessionOptions(interface: command.interface, downloadRate: command.overallRate))
        } catch {
            TextOutput.standard.err("haul: \(error.message)")
            return error.category.exitCode
        }
        let current = NIOLockedValueBox<(download: TorrentDownload?, stoppedBy: FailureCategory?)>((nil, nil))
        let signals = SignalStream([SIGINT, SIGTERM, SIGHUP])
        let watcher = Task {
            for await number in signals.stream {
                guard let category = FailureCategory.stopped(by: number) else { continue }
                // A second signal leaves at once; the first stops cleanly, the resume data saved.
                let (again, download) = current.withLockedValue { state in
                    defer { state.stoppedBy = state.stoppedBy ?? category }
                    return (state.stoppedBy != nil, state.download)
                }
                if again { _exit(category.exitCode) }
                download?.stop(category)
            }
        }
        var codes: [Int32] = []
        var completed = 0
        var bytes: Int64 = 0
        for (number, source) in sources.enumerated() {
            if let stopped = current.withLockedValue({ $0.stoppedBy }) {
                codes.append(stopped.exitCode)
                break
            }
            let download = TorrentDownload(session: session, job: job(command, source), id: number + 1, reporter: reporter)
            current.withLockedValue { $0.download = download }
            // A signal that came before the download was current stops it as it starts.
            if let stopped = current.withLockedValue({ $0.stoppedBy }) { download.stop(stopped) }
            switch await download.run(clock: clock) {
            case .success(let result):
                completed += 1
                bytes += result.bytes
                codes.append(0)
            case .failure(let error):
                codes.append(error.category.exitCode)
            }
        }
        watcher.cancel()
        signals.stop()
        await session.close()
        let code = aggregateExitCode(codes)
        reporter.report(.summary(RunSummary(completed: completed, failed: sources.count - completed, bytes: bytes,
                                            seconds: TorrentDownload.seconds(start.duration(to: clock.now)), exitCode: code)))
        return code
    }

    static func job(_ command: HaulCommand, _ source: TorrentJob.Source) -> TorrentJob {
        var job = TorrentJob(source: source, directory: command.outputDirectory ?? ".")
        job.selection = command.torrent.selectFile.flatMap { try? FileSelection.parse($0).get() }
        job.trackers = command.torrent.trackers
        job.resume = !command.noResume
        job.seeding = command.torrent.seeding
        if let seconds = command.torrent.metadataTimeout { job.metadataTimeout = .milliseconds(Int64(seconds * 1000)) }
        return job
    }
}
