import HaulCore
import Testing
@testable import HaulTUI

/// The details overlay of a download from several sources: one line for each (its state, bytes, speed, then
/// its URL, and why it failed), as `render` draws it.
@Suite struct SourcesDetailsTests {
    static func state(rows: Int, sources: [SourceStatus]) -> AppState {
        var state = Fixtures.mixed(Size(columns: 80, rows: rows))
        state.rows[0].record.apply(.sources(id: 1, sources), at: .origin)
        state.overlay = .details(1)
        return state
    }

    @Test func eachSourceHasItsLine() {
        let state = Self.state(rows: 16, sources: [
            SourceStatus(url: "http://a.example/medium.bin", state: .active, bytes: 6 << 20, bytesPerSecond: 6_291_456,
                         connections: 2),
            SourceStatus(url: "http://ann:***@b.ex/m.bin", state: .failed, bytes: 1 << 20, reason: "refused"),
            SourceStatus(url: "http://c.example/medium.bin", state: .waiting),
        ])
        #expect(render(state, size: state.size).lines == [
            " haul │ Downloads                         elapsed 0:42  13.8 MiB/s  1 of 9 done",
            " NAME                PROGRESS            %     DONE / TOTAL STATE",
            "┌─ Download 1 ─────────────────────────────────────────────────────────────────┐",
            "│ Name   medium.bin                                                            │",
            "│ URL    http://127.0.0.1:8080/files/download?medium.bin                       │",
            "│ File   downloads/medium.bin                                                  │",
            "│ State  downloading                                                           │",
            "│ Bytes  9.75 MiB / 20.0 MiB (48%)                                             │",
            "│ Speed  9.75 MiB/s, ETA 0:01                                                  │",
            "│ Source active    6.00 MiB  6.00 MiB/s   http://a.example/medium.bin          │",
            "│ Source failed    1.00 MiB               http://ann:***@b.ex/m.bin  (refused) │",
            "│ Source waiting        0 B               http://c.example/medium.bin          │",
            "│ Limit  none  (+ and - change it)                                             │",
            "└──────────────────────────────────────────────────────────────────────────────┘",
            "",
            " Esc close",
        ])
    }

    /// A metalink's dozens of mirrors do not push the rest of the details off the box: eight, then a count.
    @Test func manySourcesAreCounted() {
        let sources = (1...10).map { SourceStatus(url: "http://m\($0).example/medium.bin", state: .idle, bytes: 1 << 20) }
        let state = Self.state(rows: 24, sources: sources)
        let lines = render(state, size: state.size).lines
        #expect(lines.filter { $0.contains("│ Source idle") }.count == 8)
        #expect(lines.contains("│        and 2 more                                                            │"))
        #expect(lines.contains { $0.contains("│ Limit  none") })
    }
}
