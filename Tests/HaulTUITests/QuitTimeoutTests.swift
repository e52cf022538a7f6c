import HaulCore
import Testing
import TestSupport
@testable import HaulTUI

/// Quitting waits for the downloads to be idle, but no longer than the quit timeout, on the loop's one
/// injected clock (issue 73, point 5): the effect runner's wait and the timeout race, and the first one ends
/// the loop.
@Suite struct QuitTimeoutTests {
    @Test func quittingGivesUpWaitingAfterTheTimeoutOnTheLoopsClock() async throws {
        let screen = FakeScreen()
        let clock = ManualClock()
        let control = ScriptedControl(neverIdle: true)
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
