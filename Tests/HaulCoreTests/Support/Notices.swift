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
