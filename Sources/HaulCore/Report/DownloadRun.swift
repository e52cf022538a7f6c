import NIOConcurrencyHelpers

/// Runs a list of downloads through a `DownloadManager` (`-j` at once) for the line front ends: turns the
/// manager's events into `ReportEvent`s for a reporter, and sums up.
///
/// The events are taken where they happen (the manager's observer), not from its stream: a line reporter
/// prints and counts, which needs no task of its own to wake for every event.
package struct DownloadRun: Sendable {
    package let manager: DownloadManager
    let reporter: any Reporter
    /// Says whether a stop came from a signal, and which (`.interrupted`, `.terminated`, `.hangUp`): the
    /// stopped downloads are reported as interrupted, and the run exits with that category's code.
    let interrupted: @Sendable () -> FailureCategory?
    private let tally: Tally
    /// The downloader's clock, read as moments: what times the whole run (`RunSummary.seconds`).
    private let clock: MomentClock

    package init(downloader: Downloader = Downloader(), concurrency: Int = DownloadManager.defaultConcurrency, reporter: any Reporter,
                interrupted: @escaping @Sendable () -> FailureCategory? = { nil }) {
        let tally = Tally(reporter: reporter, interrupted: interrupted)
        // A line run follows a metalink a URL answers with; the service's queue does not yet (its store adds
        // each download itself).
        self.manager = DownloadManager(downloader: downloader, concurrency: concurrency,
                                       observer: { tally.take($0) }, followsMetalinks: true)
        self.reporter = reporter
        self.interrupted = interrupted
        self.tally = tally
        clock = MomentClock(downloader.clock)
    }

    /// Downloads everything, reporting as it goes; `manager.cancelAll()` from another task stops the run.
    package func run(_ jobs: [DownloadJob]) async -> RunSummary {
        let start = clock.now
        _ = await manager.add(jobs)
        await manager.waitUntilIdle()
        await manager.waitForHooks()
        var summary = tally.summary
        summary.seconds = start.duration(to: clock.now).seconds
        summary.exitCode = await manager.exitCode
        if let stop = interrupted() { summary.exitCode = stop.exitCode }
        reporter.report(.summary(summary))
        return summary
    }

    /// Each download's record and the counts, under a lock: events come from the manager and from every
    /// download's task at once.
    private final class Tally: Sendable {
        private struct State {
            var summary = RunSummary()
            var records: [DownloadID: DownloadRecord] = [:]
        }

        private let state = NIOLockedValueBox(State())
        private let reporter: any Reporter
        private let interrupted: @Sendable () -> FailureCategory?

        init(reporter: any Reporter, interrupted: @escaping @Sendable () -> FailureCategory?) {
            self.reporter = reporter
            self.interrupted = interrupted
        }

        var summary: RunSummary { state.withLockedValue { $0.summary } }

        func take(_ event: ManagerEvent) {
            // Reported outside the lock: the reporter has its own, and a slow terminal must not hold others.
            guard let report = state.withLockedValue({ state in Self.report(event, &state, interrupted) }) else { return }
            reporter.report(report)
        }

        private static func report(_ event: ManagerEvent, _ state: inout State,
                                   _ interrupted: () -> FailureCategory?) -> ReportEvent? {
            if let record = DownloadRecord(event) {
                state.records[event.downloadID] = record
                return nil
            }
            // The lines show no speed: the moment is never read.
            state.records[event.downloadID]?.apply(event, at: .origin)
            let record = state.records[event.downloadID]
            let url = record?.url ?? ""
            let file = record?.name ?? ""
            switch event {
            case .started(let id, let file, let path, let total, _):
                return .started(id: id, url: url, file: file, path: path, total: total)
            case .progress(let id, let progress):
                return .progress(id: id, url: url, file: file, progress)
            case .fact(let id, let fact):
                return .fact(id: id, url: url, file: file, fact)
            case .finished(let id, let result, let seconds):
                state.summary.completed += 1
                state.summary.bytes += result.bytes
                return .done(id: id, url: url, result: result, seconds: seconds)
            case .state(let id, let downloadState):
                let error: HaulError
                switch downloadState {
                case .failed(let failure): error = failure
                case .cancelled, .paused:
                    error = interrupted().map { HaulError($0, "interrupted") } ?? HaulError(.cancelled, "cancelled")
                default: return nil
                }
                state.summary.failed += 1
                return .failed(id: id, url: url, file: file, error: error)
            case .added, .removed, .sources, .moved:
                return nil
            }
        }
    }
}
