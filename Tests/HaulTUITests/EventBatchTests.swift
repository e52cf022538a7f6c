import HaulCore
import NIOConcurrencyHelpers
import Testing
import TestSupport
@testable import HaulTUI

/// The manager's events that come together (one read from the service's socket) go through `update` in
/// order and are drawn once: a thousand small downloads were a frame, and three task hand-offs, an event.
@Suite struct EventBatchTests {
    /// A `DownloadControl` whose events the test hands over, in the batches it chooses.
    final class ScriptedControl: DownloadControl {
        let (batches, feed) = AsyncStream.makeStream(of: [ManagerEvent].self)

        func eventBatches() -> AsyncStream<[ManagerEvent]> { batches }
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
        func waitUntilIdle() async {}
        var exitCode: Int32 { 0 }
        var outlivesFrontEnd: Bool { true }
    }

    @Test func eventsThatCameTogetherAreAppliedInOrderAndDrawnOnce() async throws {
        let screen = FakeScreen()
        let control = ScriptedControl()
        // Forty events, in one batch, there before the loop starts: forty frames uncapped, one event a frame.
        control.feed.yield((1...20).flatMap { id -> [ManagerEvent] in
            [.added(id: id, url: "http://x.test/f\(id).bin", file: "f\(id).bin"), .state(id: id, .done)]
        })
        let loop = AppLoop(manager: control, screen: screen, clock: ManualClock(), frameInterval: .zero) { url, _ in
            DownloadJob(url: url, outputDirectory: "/nowhere")
        }
        var state = AppState(size: Size(columns: 100, rows: 40))
        state.attached = true
        let exit = Task { try await loop.run(state, urls: []) }
        try await within(.seconds(10), "twenty rows, done") {
            await screen.waitUntil { lines in lines.contains { $0.contains("20 of 20 done") } }
        }
        #expect(screen.lines.contains { $0.contains("f20.bin") })
        // The first frame, what the start changed, and the batch's one: not one for each of its forty events.
        #expect(screen.frameCount <= 5, "\(screen.frameCount) frames")
        screen.type(.character("q"))
        #expect(try await exit.value == 0)
        control.feed.finish()
    }
}
