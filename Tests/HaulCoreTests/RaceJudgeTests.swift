import Testing
import TestSupport
@testable import HaulCore

/// The watch on the connection that went on alone, on instants of a manual clock.
@Suite struct LoneWatchTests {
    @Test func firesOnceWhenAWindowBringsLessThanHalfTheRace() {
        let start = ManualClock().now
        var watch = LoneWatch(window: .seconds(1), raceRate: 100, from: start)
        #expect(watch.slowed(bytes: 40, at: start.advanced(by: .milliseconds(500))) == nil, "the window runs")
        #expect(watch.slowed(bytes: 10, at: start.advanced(by: .seconds(1))) == nil, "50 per second: half, not less")
        #expect(watch.slowed(bytes: 20, at: start.advanced(by: .seconds(2))) == 20, "a new window: 20 per second")
        #expect(watch.slowed(bytes: 0, at: start.advanced(by: .seconds(9))) == nil, "once")
    }
}

/// The race of `-s N`'s connections, on instants of a manual clock.
@Suite struct RaceJudgeTests {
    @Test func judgedOnceWhenTheWindowHasPassedAndEveryConnectionHasBroughtBytes() {
        let start = ManualClock().now
        var fast = RaceJudge(window: .seconds(1), notLimited: 100, earlyBytes: 50, workers: 2, from: start)
        #expect(fast.verdict(worker: 0, bytes: 500, at: start.advanced(by: .seconds(2))) == nil, "worker 1 has not shown")
        #expect(fast.verdict(worker: 1, bytes: 300, at: start.advanced(by: .seconds(2))) == 150, "the slowest: 300 in 2 s")
        #expect(fast.verdict(worker: 1, bytes: 300, at: start.advanced(by: .seconds(3))) == nil, "once")

        var early = RaceJudge(window: .seconds(1), notLimited: 100, earlyBytes: 50, workers: 2, from: start)
        _ = early.verdict(worker: 0, bytes: 500, at: start)
        #expect(early.verdict(worker: 1, bytes: 49, at: start.advanced(by: .milliseconds(100))) == nil,
                "the window runs while one has brought less than the early verdict asks, however fast")
        #expect(early.verdict(worker: 1, bytes: 1, at: start.advanced(by: .milliseconds(500))) == 100,
                "every one has brought the early bytes at the bar: the verdict comes at once, 50 in half a second")
        #expect(early.verdict(worker: 1, bytes: 500, at: start.advanced(by: .seconds(2))) == nil, "once")

        // A burst, then the limit: 40 at once and 20 per second after. It has brought the early bytes by
        // half a second (50), at 100 per second, which is the bar: not below it.
        var burst = RaceJudge(window: .seconds(1), notLimited: 100, earlyBytes: 50, workers: 2, from: start)
        _ = burst.verdict(worker: 0, bytes: 500, at: start)
        _ = burst.verdict(worker: 1, bytes: 40, at: start.advanced(by: .milliseconds(1)))
        #expect(burst.verdict(worker: 1, bytes: 6, at: start.advanced(by: .milliseconds(300))) == nil,
                "the early bytes not yet in")
        #expect(burst.verdict(worker: 1, bytes: 6, at: start.advanced(by: .milliseconds(600))) == nil,
                "the early bytes in (52), but at 87 per second: the limit shows through the burst")
        #expect(burst.verdict(worker: 1, bytes: 8, at: start.advanced(by: .seconds(1))) == nil,
                "and at the window's end it is still below the bar: all stay")

        var limited = RaceJudge(window: .seconds(1), notLimited: 100, earlyBytes: 50, workers: 2, from: start)
        _ = limited.verdict(worker: 0, bytes: 5000, at: start)
        #expect(limited.verdict(worker: 1, bytes: 50, at: start.advanced(by: .seconds(1))) == nil, "one held back: all stay")
    }
}
