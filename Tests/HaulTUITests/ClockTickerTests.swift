import NIOConcurrencyHelpers
import Testing
import TestSupport
@testable import HaulTUI

/// The elapsed clock's task, driven by a manual clock: no sleeping in the test.
@Suite struct ClockTickerTests {
    @Test func ticksOncePerIntervalAndStopsWhenCancelled() async {
        let clock = ManualClock()
        let (ticks, sink) = AsyncStream<Void>.makeStream()
        let count = NIOLockedValueBox(0)
        let ticker = ClockTicker(clock: clock) {
            count.withLockedValue { $0 += 1 }
            sink.yield()
        }
        var received = ticks.makeAsyncIterator()
        #expect(!ticker.isRunning)
        ticker.start()
        ticker.start()  // idempotent: still one task
        #expect(ticker.isRunning)
        for second in 1...3 {
            await clock.waitForSleepers(1)
            #expect(clock.sleeperCount == 1)
            clock.advance(by: .milliseconds(999))
            #expect(count.withLockedValue { $0 } == second - 1, "not before the second is over")
            clock.advance(by: .milliseconds(1))
            await received.next()
            #expect(count.withLockedValue { $0 } == second)
        }
        await clock.waitForSleepers(1)
        ticker.stop()
        #expect(!ticker.isRunning)
        #expect(clock.sleeperCount == 0, "cancelling the task ends its sleep at once")
        clock.advance(by: .seconds(10))
        #expect(count.withLockedValue { $0 } == 3)
        ticker.stop()  // idempotent
    }

    @Test func startsAgainAfterAStop() async {
        let clock = ManualClock()
        let (ticks, sink) = AsyncStream<Void>.makeStream()
        let ticker = ClockTicker(clock: clock) { sink.yield() }
        var received = ticks.makeAsyncIterator()
        ticker.start()
        await clock.waitForSleepers(1)
        ticker.stop()
        ticker.start()
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(1))
        await received.next()
        ticker.stop()
        #expect(clock.sleeperCount == 0)
    }
}
