import HaulCore
import Testing
import TestSupport
@testable import HaulService

/// The store's group commit with a wait, on a manual clock: a lone event at once, a stream of them in one
/// transaction per wait.
@Suite struct StoreCommitsTests {
    static func event(_ n: Int) -> ManagerEvent { EventBacklogTests.event(n) }

    @Test func whileEventsKeepComingOneTransactionTakesWhatCameDuringTheWait() async {
        let clock = ManualClock()
        let backlog = EventBacklog()
        let (batches, sink) = AsyncStream.makeStream(of: [ManagerEvent].self)
        let commits = StoreCommits(backlog: backlog, clock: clock)
        let runner = Task {
            await commits.run { sink.yield($0) }
            sink.finish()
        }
        var recorded = batches.makeAsyncIterator()

        // After a quiet spell, an event is written at once: no wait.
        backlog.append(Self.event(1))
        #expect(await recorded.next() == [Self.event(1)])
        #expect(clock.sleeperCount == 0)

        // The next comes right after that transaction: it waits for the ones that follow it.
        backlog.append(Self.event(2))
        await clock.waitForSleepers(1)
        backlog.append(Self.event(3))
        backlog.append(Self.event(4))
        clock.advance(by: StoreCommits<ManualClock>.delay)
        #expect(await recorded.next() == [Self.event(2), Self.event(3), Self.event(4)])

        // Quiet again for longer than the wait: at once.
        clock.advance(by: .seconds(1))
        backlog.append(Self.event(5))
        #expect(await recorded.next() == [Self.event(5)])
        #expect(clock.sleeperCount == 0)

        backlog.finish()
        #expect(await recorded.next() == nil)
        await runner.value
    }

    /// A finished backlog ends the run after its last events, even in the middle of a stream of them.
    @Test func theLastEventsAreWrittenWhenTheBacklogFinishes() async {
        let clock = ManualClock()
        let backlog = EventBacklog()
        let (batches, sink) = AsyncStream.makeStream(of: [ManagerEvent].self)
        let runner = Task {
            await StoreCommits(backlog: backlog, clock: clock).run { sink.yield($0) }
            sink.finish()
        }
        var recorded = batches.makeAsyncIterator()
        backlog.append(Self.event(1))
        #expect(await recorded.next() == [Self.event(1)])
        backlog.append(Self.event(2))
        await clock.waitForSleepers(1)
        backlog.append(Self.event(3))
        backlog.finish()
        clock.advance(by: StoreCommits<ManualClock>.delay)
        #expect(await recorded.next() == [Self.event(2), Self.event(3)])
        #expect(await recorded.next() == nil)
        await runner.value
    }
}
