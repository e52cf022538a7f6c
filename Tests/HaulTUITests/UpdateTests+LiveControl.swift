@testable import HaulCore
import Testing
@testable import HaulTUI

/// The keys a curl/aria2 user reaches for on the full screen: `+`/`-` for the overall cap, `o`/`O` to open
/// what arrived, and the desktop told when a long download is done.
extension UpdateTests {
    /// Wide enough for the cap beside the speed in the header.
    var wide: Size { Size(columns: 110, rows: 20) }

    @Test func plusAndMinusStepTheOverallCapAndTheHeaderShowsIt() {
        var state = Fixtures.mixed(wide)
        #expect(send(&state, .character("+")) == [], "no cap to raise")
        #expect(state.message == "No limit")
        // Down from none: below the speed now, or 8 MiB/s when nothing moves.
        state.rows = state.rows.map { row in var row = row; row.bytesPerSecond = 0; return row }
        #expect(send(&state, .character("-")) == [.setOverallLimit(8 << 20)])
        #expect(render(state, size: wide).lines[0].contains("≤ 8.00 MiB/s"), "\(render(state, size: wide).lines[0])")
        #expect(send(&state, .character("-")) == [.setOverallLimit(4 << 20)])
        #expect(send(&state, .character("+"), .character("=")) == [.setOverallLimit(8 << 20), .setOverallLimit(16 << 20)])
        state.overallLimit = 1 << 30
        #expect(send(&state, .character("+")) == [.setOverallLimit(nil)], "past the top: no cap")
        #expect(!render(state, size: wide).lines[0].contains("≤"))
        state.overallLimit = 64 << 10
        #expect(send(&state, .character("-")) == [], "the lowest step stays")
        // The cap the screen started with (the service's, or --limit-rate).
        _ = update(&state, .limitLoaded(2 << 20))
        #expect(render(state, size: wide).lines[0].contains("≤ 2.00 MiB/s"))
    }

    @Test func aDownloadsOwnLimitIsInItsDetailsAndPlusMinusThereChangeIt() {
        var state = Fixtures.state(wide, rows: [Fixtures.row(1, "big.iso", .downloading, completed: 10, total: 100)])
        _ = update(&state, .manager(.fact(id: 1, .limited(bytesPerSecond: 512 << 10))))
        #expect(state.rows[0].limit == 512 << 10)
        #expect(state.rows[0].lastFact == nil, "a setting, not the last notice")
        #expect(send(&state, .enter) == [])
        #expect(render(state, size: wide).lines.contains { $0.contains("Limit  512 KiB/s  (+ and - change it)") })
        #expect(send(&state, .character("-")) == [.setLimit(1, 256 << 10)])
        #expect(state.overlay == .details(1), "the details stay open")
        #expect(send(&state, .character("+"), .character("+")) == [.setLimit(1, 512 << 10), .setLimit(1, 1 << 20)])
        #expect(state.overallLimit == nil, "the overall cap is another setting")
    }

    @Test func minusFromNoCapGoesBelowTheSpeedNow() {
        #expect(steppedLimit(nil, up: false, speed: 3_000_000) == 2 << 20)
        #expect(steppedLimit(nil, up: false, speed: 10) == 64 << 10)
        #expect(steppedLimit(nil, up: false, speed: 0) == 8 << 20)
    }

    @Test func oOpensAFinishedFileAndCapitalOItsFolder() {
        var state = Fixtures.mixed(wide)
        state.selection = 4  // done.iso
        let path = try! #require(state.rows[4].path)
        #expect(send(&state, .character("o")) == [.open(path: path)])
        #expect(send(&state, .character("O")) == [.open(path: FilePath.parent(of: path))])
        state.selection = 0
        #expect(send(&state, .character("o")) == [])
        #expect(state.message == "Only a finished download can be opened")
        _ = update(&state, .notice("Cannot open: xdg-open is not installed (xdg-utils)"))
        #expect(render(state, size: wide).lines.last?.contains("xdg-open is not installed") == true)
    }

    @Test func aLongDownloadThisScreenWatchedNotifiesWhenDone() {
        var state = Fixtures.state(wide, rows: [Fixtures.row(1, "big.iso", .downloading, completed: 10, total: 100)])
        let result = DownloadResult(file: "big.iso", path: "/tmp/big.iso", bytes: 100, skipped: false)
        var watched = state
        for _ in 0..<AppState.notifyAfterSeconds { _ = update(&watched, .tick) }
        #expect(update(&watched, .manager(.finished(id: 1, result, seconds: 12)))
                == [.notify("big.iso downloaded (100 B)")])
        // A short one, or one that was done before the screen saw it run (a snapshot): no notification.
        #expect(update(&state, .manager(.finished(id: 1, result, seconds: 12))).filter { $0 != .startClock } == [])
        var quiet = Fixtures.state(wide, rows: [Fixtures.row(1, "big.iso", .downloading, completed: 10, total: 100)])
        quiet.notify = false
        for _ in 0..<AppState.notifyAfterSeconds { _ = update(&quiet, .tick) }
        #expect(update(&quiet, .manager(.finished(id: 1, result, seconds: 12))) == [])
    }
}
