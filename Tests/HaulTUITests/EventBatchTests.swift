import HaulCore
import NIOConcurrencyHelpers
import Testing
import TestSupport
@testable import HaulTUI

/// The manager's events that come together (one read from the service's socket) go through `update` in
/// order and are drawn once: a thousand small downloads were a frame, and three task hand-offs, an event.
@Suite struct EventBatchTests {
    @Test func eventsThatCameTogetherAreAppliedInOrderAndDrawnOnce() async throws {
        let screen = FakeScreen()
        let control = ScriptedControl(outlivesFrontEnd: true)
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
