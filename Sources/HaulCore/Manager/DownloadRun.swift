import NIOConcurrencyHelpers

/// Runs a list of downloads one after another, telling a reporter everything, and sums up.
///
/// Cancelling the calling task cancels the download in progress and the ones not yet started; each is
/// reported as failed with `.cancelled` (its `.part` stays for a later resume).
public struct DownloadRun: Sendable {
    public let downloader: Downloader
    public let reporter: any Reporter
    /// Says whether a cancellation came from SIGINT, so it is reported as an interruption.
    public let interrupted: @Sendable () -> Bool

    public init(downloader: Downloader = Downloader(), reporter: any Reporter,
                interrupted: @escaping @Sendable () -> Bool = { false }) {
        self.downloader = downloader
        self.reporter = reporter
        self.interrupted = interrupted
    }

    public func run(_ jobs: [DownloadJob]) async -> RunSummary {
        let clock = ContinuousClock()
        let start = clock.now
        var summary = RunSummary()
        var codes: [Int32] = []
        for (index, job) in jobs.enumerated() {
            let id = index + 1
            let began = clock.now
            switch await runOne(job, id: id) {
            case .success(let result):
                summary.completed += 1
                summary.bytes += result.bytes
                codes.append(0)
                reporter.report(.done(id: id, url: job.url, result: result, seconds: (clock.now - began).seconds))
            case .failure(let failure):
                summary.failed += 1
                codes.append(failure.error.category.exitCode)
                reporter.report(.failed(id: id, url: job.url, file: failure.file, error: failure.error))
            }
        }
        summary.seconds = (clock.now - start).seconds
        summary.exitCode = aggregateExitCode(codes)
        reporter.report(.summary(summary))
        return summary
    }

    private struct Failure: Error {
        var file: String
        var error: HaulError
    }

    private func runOne(_ job: DownloadJob, id: Int) async -> Result<DownloadResult, Failure> {
        let name = NIOLockedValueBox(job.outputName ?? FileNaming.sanitize(FileNaming.lastPathSegment(of: job.url)))
        if let problem = URLCheck.problem(with: job.url) {
            return .failure(Failure(file: name.withLockedValue { $0 }, error: HaulError(.usage, problem)))
        }
        if Task.isCancelled {
            let error = interrupted() ? HaulError(.interrupted, "interrupted before it started")
                : HaulError(.cancelled, "cancelled before it started")
            return .failure(Failure(file: name.withLockedValue { $0 }, error: error))
        }
        let reporter = self.reporter
        do {
            let result = try await downloader.download(job) { event in
                let file = name.withLockedValue { $0 }
                switch event {
                case .started(let started, let path, let total):
                    name.withLockedValue { $0 = started }
                    reporter.report(.started(id: id, url: job.url, file: started, path: path, total: total))
                case .progress(let progress):
                    reporter.report(.progress(id: id, url: job.url, file: file, progress))
                case .notice(let message):
                    reporter.report(.notice(id: id, url: job.url, file: file, message: message))
                }
            }
            return .success(result)
        } catch {
            let reported = error.category == .cancelled && interrupted() ? HaulError(.interrupted, "interrupted") : error
            return .failure(Failure(file: name.withLockedValue { $0 }, error: reported))
        }
    }
}
