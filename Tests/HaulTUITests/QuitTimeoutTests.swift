import HaulCore
import Testing
import TestSupport
@testable import HaulTUI

/// Quitting waits for the downloads to be idle, but no longer than the quit timeout, on the loop's one
/// injected clock (issue 73, point 5): the effect runner's wait and the timeout race, and the first one ends
/// the loop.
@Suite struct QuitTimeoutTests {
    /// A `DownloadControl` that never becomes idle: its wait ends only when its task is cancelled.
    final class NeverIdle: DownloadControl {
        let (idle, never) = AsyncStream.makeStream(of: Void.self)

        func eventBatches() -> AsyncStream<[ManagerEvent]> { AsyncStream { $0.finish() } }
        func submit(_ jobs: [DownloadJob]) async {}
        func cancel(_ id: DownloadID) async {}
        func cancelAll() async {}
        func pause(_ id: DownloadID) async {}
        func resume(_ id: DownloadID) async {}
        func pauseAll() async {}
        func resumeAll() async {}
        func retry(_ id: DownloadID) async {}
        func remove(_ id: DownloadID) async {}
        func setLimit(_ id: DownloadID, _ bytesPerSecond: Int64?) async {}
        func setOverallLimit(_ bytesPerSecond: Int64?) async {}
        var overallLimit: Int64? { nil }
        /// Iterating an `AsyncStream` ends when the waiting task is cancelled: the loop cancels it as it leaves.
        func waitUntilIdle() async { for await _ in idle {} }
        var exitCode: Int32 { 0 }
        var outlivesFrontEnd: Bool { false }
    }

    @Test func quittingGivesUpWaitingAfterTheTimeoutOnTheLoopsClock() async throws {
        let screen = FakeScreen()
        let clock = ManualClock()
        let control = NeverIdle()
        // Far longer than any bound of the test: a timeout on another clock would not end it in time.
        let timeout = Duration.seconds(300)
        let loop = AppLoop(manager: control, screen: screen, clock: clock, frameInterval: .zero,
                           quitTimeout: timeout) { url, _ in DownloadJob(url: url, outputDirectory: "/nowhere") }
        let exit = Task { try await loop.run(AppState(size: Size(columns: 1, rows: 1)), urls: []) }
        try await within(.seconds(10), "the first frame") { await screen.waitUntil { !$0.isEmpty } }

        // Nothing runs: q quits at once, and the loop waits for idle or the timeout, whichever comes first.
        screen.type(.character("q"))
        await clock.waitForSleepers(1)
        clock.advance(by: timeout - .milliseconds(1))
        #expect(!screen.stopped, "not before the timeout")
        clock.advance(by: .milliseconds(1))
        let code = try await within(.seconds(10), "the loop leaves") { try await exit.value }
        #expect(code == 0)
        #expect(screen.stopped)
        #expect(clock.sleeperCount == 0, "nothing is left waiting on the clock")
        control.never.finish()
    }
}
