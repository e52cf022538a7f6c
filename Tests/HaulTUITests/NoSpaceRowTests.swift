import HaulCore
import Testing
@testable import HaulTUI

/// A download waiting for room (issue 75) on the screen: its row says so with the reason, it counts as in
/// the queue (pausable, cancellable), and `r` has the room looked at again at once.
@Suite struct NoSpaceRowTests {
    static let why = HaulError(.fileIO, "not enough free space: needs 47.7 MiB, 20.0 MiB free in /d",
                               reason: .noRoom(needed: 50_000_000))

    @Test func theRowSaysNoSpaceAndWhy() {
        let row = Fixtures.row(1, "big.bin", .noSpace(Self.why))
        #expect(DownloadList.stateText(row) == "no space: not enough free space: needs 47.7 MiB, 20.0 MiB free in /d")
        #expect(row.isRunning, "waiting in the queue: p pauses it, c cancels it")
        let size = Size(columns: 200, rows: 10)
        let text = render(Fixtures.state(size, rows: [row]), size: size).lines
        #expect(text.contains { $0.contains("big.bin") && $0.contains(" no space: not enough free space: needs") },
                "\(text)")
    }

    @Test func retryLooksForRoomAgain() {
        var state = Fixtures.state(Size(columns: 120, rows: 10), rows: [Fixtures.row(4, "big.bin", .noSpace(Self.why))])
        #expect(update(&state, .key(.character("r"))).contains(.retry(4)))
        #expect(update(&state, .key(.character("p"))).contains(.pause(4)))
    }
}
