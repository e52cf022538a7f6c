import SampleServer
import TestSupport
@testable import HaulCore

extension Downloader {
    /// A downloader that retries after 10 ms instead of half a second, so retry tests run fast.
    static var quickRetries: Downloader {
        var downloader = Downloader()
        downloader.retryPolicy.base = .milliseconds(10)
        return downloader
    }

    /// Runs `job` to its end, returning the outcome and the notices it gave on the way.
    func runCollectingNotices(_ job: DownloadJob) async -> (Result<DownloadResult, HaulError>, [String]) {
        var notices: [String] = []
        do {
            let result = try await download(job) { event in
                if case .notice(let text) = event { notices.append(text) }
            }
            return (.success(result), notices)
        } catch {
            return (.failure(error), notices)
        }
    }
}

extension DownloadJob {
    /// A sample-server file into `dir`, with `retries` retries and `segments` connections.
    static func sample(_ server: SampleServer, _ name: String, _ dir: TempDirectory, segments: Int = 1,
                       retries: Int = 5) -> DownloadJob {
        var job = DownloadJob(url: server.downloadURL(name), outputDirectory: dir.path)
        job.segments = segments
        job.retries = retries
        return job
    }
}

/// Runs `job` with quick retries; the outcome and the notices given on the way.
func runQuickly(_ job: DownloadJob) async -> (Result<DownloadResult, HaulError>, [String]) {
    await Downloader.quickRetries.runCollectingNotices(job)
}
