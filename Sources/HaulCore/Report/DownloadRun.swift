/// Runs a list of downloads through a `DownloadManager` (`-j` at once) for the line front ends: turns the
/// manager's events into `ReportEvent`s for a reporter, and sums up.
package struct DownloadRun: Sendable {
    package let manager: DownloadManager
    package let reporter: any Reporter
    /// Says whether a stop came from a signal, and which (`.interrupted`, `.terminated`, `.hangUp`): the
    /// stopped downloads are reported as interrupted, and the run exits with that category's code.
    package let interrupted: @Sendable () -> FailureCategory?

    package init(downloader: Downloader = Downloader(), concurrency: Int = DownloadManager.defaultConcurrency, reporter: any Reporter,
                interrupted: @escaping @Sendable () -> FailureCategory? = { nil }) {
        self.manager = DownloadManager(downloader: downloader, concurrency: concurrency)
        self.reporter = reporter
        self.interrupted = interrupted
    }

    /// Downloads everything, reporting as it goes; `manager.cancelAll()` from another task stops the run.
    package func run(_ jobs: [DownloadJob]) async -> RunSummary {
        let start = ContinuousClock.now
        async let reported = report(manager.events)
        for job in jobs { await manager.add(job) }
        await manager.waitUntilIdle()
        await manager.waitForHooks()
        await manager.finishEvents()
        var summary = await reported
        summary.seconds = (ContinuousClock.now - start).seconds
        summary.exitCode = await manager.exitCode
        if let stop = interrupted() { summary.exitCode = stop.exitCode }
        reporter.report(.summary(summary))
        return summary
    }

    private func report(_ events: AsyncStream<ManagerEvent>) async -> RunSummary {
        var summary = RunSummary()
        var urls: [DownloadID: String] = [:]
        var files: [DownloadID: String] = [:]
        for await event in events {
            switch event {
            case .added(let id, let url, let file):
                urls[id] = url
                files[id] = file
            case .started(let id, let file, let path, let total):
                files[id] = file
                reporter.report(.started(id: id, url: urls[id] ?? "", file: file, path: path, total: total))
            case .progress(let id, let progress):
                reporter.report(.progress(id: id, url: urls[id] ?? "", file: files[id] ?? "", progress))
            case .fact(let id, let fact):
                reporter.report(.fact(id: id, url: urls[id] ?? "", file: files[id] ?? "", fact))
            case .finished(let id, let result, let seconds):
                summary.completed += 1
                summary.bytes += result.bytes
                reporter.report(.done(id: id, url: urls[id] ?? "", result: result, seconds: seconds))
            case .state(let id, let state):
                let error: HaulError
                switch state {
                case .failed(let failure): error = failure
                case .cancelled, .paused:
                    error = interrupted().map { HaulError($0, "interrupted") } ?? HaulError(.cancelled, "cancelled")
                default: continue
                }
                summary.failed += 1
                reporter.report(.failed(id: id, url: urls[id] ?? "", file: files[id] ?? "", error: error))
            case .removed:
                break
            }
        }
        return summary
    }
}
