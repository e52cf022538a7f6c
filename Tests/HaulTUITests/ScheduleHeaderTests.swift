@testable import HaulCore
import Testing
@testable import HaulTUI

/// The screen's side of the service's schedule: the header says where it stands, a scheduled row says so,
/// and the schedule is asked for again when its next change comes.
@Suite struct ScheduleHeaderTests {
    @Test func theHeaderShowsTheWindowTheCapAndTheNextChange() {
        var state = Fixtures.state(Size(columns: 120, rows: 6), rows: [Fixtures.row(1, "night.iso", .scheduled)])
        state.schedule = ScheduleStatus(open: false, window: "01:00-07:00", next: 0, nextClock: "01:00",
                                        secondsToNext: 3600)
        let lines = render(state, size: state.size).lines
        #expect(lines[0].hasSuffix("closed till 01:00-07:00, next 01:00  elapsed 0:00  0 B/s  0 of 1 done"))
        #expect(lines[2].hasSuffix("scheduled"))
        state.schedule = ScheduleStatus(open: true, window: "01:00-07:00", limit: 1 << 20, nextClock: "07:00")
        #expect(render(state, size: state.size).lines[0].contains("window 01:00-07:00 open, ≤ 1.00 MiB/s, next 07:00"))
        // Narrow: the schedule goes before the counts do.
        state.size = Size(columns: 60, rows: 6)
        #expect(render(state, size: state.size).lines[0].hasSuffix("0 of 1 done"))
    }

    @Test func theScheduleIsAskedForAgainWhenItsNextChangeComes() {
        var state = AppState(size: Size(columns: 100, rows: 20))
        _ = update(&state, .scheduleLoaded(ScheduleStatus(open: false, window: "01:00-07:00", secondsToNext: 2)))
        #expect(update(&state, .tick).contains(.loadLimit) == false)
        #expect(update(&state, .tick).contains(.loadLimit) == false)
        #expect(update(&state, .tick).contains(.loadLimit), "a second past the change")
        _ = update(&state, .scheduleLoaded(nil))
        for _ in 0..<AppState.scheduleRecheck { #expect(update(&state, .tick).contains(.loadLimit) == false) }
    }
}
