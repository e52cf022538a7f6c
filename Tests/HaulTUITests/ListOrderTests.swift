import Foundation
import HaulCore
import Testing
@testable import HaulTUI

/// The downloads view's order: the queue's (`K`/`J`/`T`/`B`, and `moved` events from the service), the sorts
/// `s` cycles through, and the name filter `/` types, read back as `render`'s text.
@Suite struct ListOrderTests {
    /// Five downloads built from the events a service sends: alpha running at 50%, beta and Charlie queued,
    /// delta paused while waiting, echo done.
    static var five: AppState {
        var state = Fixtures.state(Size(columns: 80, rows: 9))
        let names = ["alpha.iso", "beta.bin", "Charlie.tar", "delta.zip", "echo.txt"]
        var events: [ManagerEvent] = names.enumerated().map { .added(id: $0.offset + 1, url: "http://h/\($0.element)", file: $0.element) }
        let sizes: [Int64] = [40 << 20, 10 << 20, 30 << 20, 20 << 20, 5 << 20]
        events += [
            .state(id: 1, .connecting),
            .started(id: 1, file: "alpha.iso", path: "/d/alpha.iso", total: sizes[0]),
            .progress(id: 1, DownloadProgress(completed: 20 << 20, batchBytes: 0, total: sizes[0], bytesPerSecond: 0)),
            .state(id: 1, .downloading),
            .state(id: 4, .paused),
            .state(id: 5, .connecting),
            .started(id: 5, file: "echo.txt", path: "/d/echo.txt", total: sizes[4]),
            .finished(id: 5, DownloadResult(file: "echo.txt", path: "/d/echo.txt", bytes: sizes[4], skipped: false), seconds: 1),
            .state(id: 5, .done),
        ]
        for event in events { _ = update(&state, .manager(event)) }
        for (index, size) in sizes.enumerated() where state.rows[index].total == nil { state.rows[index].total = size }
        state.refreshListing()
        return state
    }

    /// What the loop does with a message: `update`, then the listing made again once.
    @discardableResult
    static func send(_ message: Message, to state: inout AppState) -> [Effect] {
        let effects = update(&state, message)
        state.refreshListing()
        return effects
    }

    static func names(_ state: AppState) -> [String] {
        render(state, size: state.size).lines.dropFirst(2).prefix(5).map { line in
            String(line.dropFirst().prefix { $0 != " " })
        }
    }

    @Test func aMoveFromTheServiceReordersTheWaitingRowsInTheirPlaces() {
        var state = Self.five
        #expect(state.queue.ids == [2, 3, 4])
        #expect(Self.names(state) == ["alpha.iso", "beta.bin", "Charlie.tar", "delta.zip", "echo.txt"])
        state.selection = 3  // delta
        Self.send(.manager(.moved(id: 4, position: 0)), to: &state)
        #expect(Self.names(state) == ["alpha.iso", "delta.zip", "beta.bin", "Charlie.tar", "echo.txt"])
        // The selection went with the row.
        #expect(state.selectedRow?.id == 4 && state.selection == 1)
        #expect(render(state, size: state.size).lines == [
            " haul │ Downloads                              elapsed 0:00  0 B/s  1 of 5 done",
            " NAME                PROGRESS            %     DONE / TOTAL STATE",
            " alpha.iso           ████████░░░░░░░░  50%    20.0/40.0 MiB 0 B/s",
            "›delta.zip           ░░░░░░░░░░░░░░░░   0%     0 B/20.0 MiB paused",
            " beta.bin            ░░░░░░░░░░░░░░░░   0%     0 B/10.0 MiB queued",
            " Charlie.tar         ░░░░░░░░░░░░░░░░   0%     0 B/30.0 MiB queued",
            " echo.txt            ████████████████ 100%    5.00/5.00 MiB done",
            "",
            " ? help  q quit  c cancel  C cancel all  p pause  a add  Tab files  r retry",
        ])
    }

    @Test func theMoveKeysAskTheServiceForAWaitingDownloadOnly() {
        var state = Self.five
        state.selection = 2  // Charlie
        #expect(Self.send(.key(.character("K")), to: &state) == [.move(3, .up)])
        #expect(Self.send(.key(.character("J")), to: &state) == [.move(3, .down)])
        #expect(Self.send(.key(.character("T")), to: &state) == [.move(3, .top)])
        #expect(Self.send(.key(.character("B")), to: &state) == [.move(3, .bottom)])
        state.selection = 0  // alpha runs
        #expect(Self.send(.key(.character("K")), to: &state).isEmpty)
        #expect(state.message == "Only a queued or paused download moves in the queue")
        #expect(render(state, size: state.size).lines.last == " Only a queued or paused download moves in the queue")
    }

    @Test func sCyclesTheSortsAndTheHeaderNamesTheOneInForce() {
        var state = Self.five
        state.selection = 2  // Charlie
        var seen: [[String]] = []
        var headers: [String] = []
        for _ in ListSort.allCases {
            Self.send(.key(.character("s")), to: &state)
            seen.append(Self.names(state))
            headers.append(render(state, size: state.size).lines[0])
            // The selected download stays selected, wherever the sort puts it.
            #expect(state.selectedRow?.id == 3)
        }
        #expect(seen == [
            ["alpha.iso", "beta.bin", "Charlie.tar", "delta.zip", "echo.txt"],  // added
            ["echo.txt", "alpha.iso", "beta.bin", "Charlie.tar", "delta.zip"],  // finished
            ["alpha.iso", "beta.bin", "Charlie.tar", "delta.zip", "echo.txt"],  // name, ignoring case
            ["alpha.iso", "Charlie.tar", "delta.zip", "beta.bin", "echo.txt"],  // size
            ["echo.txt", "alpha.iso", "beta.bin", "Charlie.tar", "delta.zip"],  // progress
            ["alpha.iso", "beta.bin", "Charlie.tar", "delta.zip", "echo.txt"],  // speed (none moves)
            ["alpha.iso", "beta.bin", "Charlie.tar", "delta.zip", "echo.txt"],  // queue order again
        ])
        #expect(headers == [
            " haul │ Downloads │ by added                   elapsed 0:00  0 B/s  1 of 5 done",
            " haul │ Downloads │ by finished                elapsed 0:00  0 B/s  1 of 5 done",
            " haul │ Downloads │ by name                    elapsed 0:00  0 B/s  1 of 5 done",
            " haul │ Downloads │ by size                    elapsed 0:00  0 B/s  1 of 5 done",
            " haul │ Downloads │ by progress                elapsed 0:00  0 B/s  1 of 5 done",
            " haul │ Downloads │ by speed                   elapsed 0:00  0 B/s  1 of 5 done",
            " haul │ Downloads                              elapsed 0:00  0 B/s  1 of 5 done",
        ])
    }

    @Test func slashFiltersByNameAsYouTypeEnterKeepsItEscClearsIt() {
        var state = Self.five
        Self.send(.key(.character("/")), to: &state)
        for c in "TA" { Self.send(.key(.character(c)), to: &state) }
        #expect(Self.names(state) == ["beta.bin", "Charlie.tar", "delta.zip", "", ""])
        #expect(render(state, size: state.size).lines == [
            " haul │ Downloads │ /TA (3 of 5)               elapsed 0:00  0 B/s  1 of 5 done",
            " NAME                PROGRESS            %     DONE / TOTAL STATE",
            "›beta.bin            ░░░░░░░░░░░░░░░░   0%     0 B/10.0 MiB queued",
            " Charlie.tar         ░░░░░░░░░░░░░░░░   0%     0 B/30.0 MiB queued",
            " delta.zip           ░░░░░░░░░░░░░░░░   0%     0 B/20.0 MiB paused",
            "",
            "",
            "",
            " /TA_  Enter keep  Esc clear",
        ])
        // Letters go to the filter while it is typed, even those that are keys (r, c, q).
        Self.send(.key(.character("r")), to: &state)
        #expect(Self.names(state) == ["Charlie.tar", "", "", "", ""])
        Self.send(.key(.backspace), to: &state)
        Self.send(.key(.enter), to: &state)
        #expect(state.listing.filter == "TA" && !state.listing.editing)
        // Kept: the keys act again, on the rows shown; the selection stayed with Charlie.tar.
        #expect(Self.send(.key(.character("K")), to: &state) == [.move(3, .up)])
        Self.send(.key(.character("/")), to: &state)
        for c in "zz" { Self.send(.key(.character(c)), to: &state) }
        #expect(render(state, size: state.size).lines[2] == "  No download's name contains \"TAzz\" (Esc clears the filter).")
        Self.send(.key(.escape), to: &state)
        #expect(state.listing.filter.isEmpty)
        #expect(Self.names(state) == ["alpha.iso", "beta.bin", "Charlie.tar", "delta.zip", "echo.txt"])
        // Nothing was selected in the empty list: the first row is.
        #expect(state.selectedRow?.id == 1)
    }

    /// 10,000 rows: only the screen's are drawn, and a sort or a filter is made once, not per row drawn.
    @Test func aLongQueueRendersItsVisibleRowsOnly() {
        var state = Fixtures.state(Size(columns: 80, rows: 6))
        for id in 1...10_000 {
            _ = update(&state, .manager(.added(id: id, url: "http://h/\(id)", file: String(format: "file-%05d.bin", 10_001 - id))))
        }
        state.refreshListing()
        Self.send(.manager(.moved(id: 10_000, position: 0)), to: &state)
        #expect(Self.names(state).prefix(3) == ["file-00001.bin", "file-10000.bin", "file-09999.bin"])
        // The selection went with its row (the first added, now second): to the top again.
        #expect(state.selectedRow?.id == 1)
        Self.send(.key(.home), to: &state)
        Self.send(.key(.character("s")), to: &state)
        Self.send(.key(.character("s")), to: &state)
        Self.send(.key(.character("s")), to: &state)
        #expect(Self.names(state).prefix(3) == ["file-00001.bin", "file-00002.bin", "file-00003.bin"])
        Self.send(.key(.character("/")), to: &state)
        for c in "9999" { Self.send(.key(.character(c)), to: &state) }
        #expect(Self.names(state).prefix(2) == ["file-09999.bin", ""])
    }
}
