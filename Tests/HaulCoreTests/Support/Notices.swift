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

    /// Runs `job` to its end, returning the outcome and the facts it told on the way; `onProgress` sees each
    /// progress event as it is told (a test may move a manual clock there).
    func runCollectingFacts(_ job: DownloadJob, onProgress: (DownloadProgress) -> Void = { _ in })
        async -> (Result<DownloadResult, HaulError>, [DownloadFact])
    {
        var facts: [DownloadFact] = []
        do {
            let result = try await download(job) { event in
                switch event {
                case .fact(let fact): facts.append(fact)
                case .progress(let progress): onProgress(progress)
                case .started, .sources: break
                }
            }
            return (.success(result), facts)
        } catch {
            return (.failure(error), facts)
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

/// Runs `job` with quick retries; the outcome and the facts told on the way.
func runQuickly(_ job: DownloadJob) async -> (Result<DownloadResult, HaulError>, [DownloadFact]) {
    await Downloader.quickRetries.runCollectingFacts(job)
}

extension DownloadFact {
    /// The retry's attempt and where it resumes, for a `.retrying` fact.
    var retry: (attempt: Int, of: Int, resumeAt: Int64, reason: HaulError)? {
        guard case .retrying(let attempt, let of, _, let resumeAt, let reason) = self else { return nil }
        return (attempt, of, resumeAt, reason)
    }
}
