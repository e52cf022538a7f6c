import HaulCore
import NIOConcurrencyHelpers
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

    /// Each batch goes to the roster (`applying`) as it is taken, before the wait for the rest of its
    /// transaction ends; what came during the wait goes to it once the wait ends, and then the transaction
    /// holds both. One task for the roster and the store, the roster still first.
    @Test func eachBatchIsAppliedAsItIsTakenAndBeforeItIsRecorded() async {
        let clock = ManualClock()
        let backlog = EventBacklog()
        let (applied, applying) = AsyncStream.makeStream(of: [ManagerEvent].self)
        let (recorded, recording) = AsyncStream.makeStream(of: [ManagerEvent].self)
        let log = NIOLockedValueBox<[String]>([])
        let runner = Task {
            await StoreCommits(backlog: backlog, clock: clock).run(applying: { events in
                log.withLockedValue { $0.append("applied \(events.count)") }
                applying.yield(events)
            }) { events in
                log.withLockedValue { $0.append("recorded \(events.count)") }
                recording.yield(events)
            }
            applying.finish()
            recording.finish()
        }
        var appliedBatches = applied.makeAsyncIterator()
        var recordedBatches = recorded.makeAsyncIterator()

        backlog.append(Self.event(1))
        #expect(await appliedBatches.next() == [Self.event(1)])
        #expect(await recordedBatches.next() == [Self.event(1)])

        // Right after that transaction: the batch reaches the roster at once, and its transaction waits.
        backlog.append(Self.event(2))
        #expect(await appliedBatches.next() == [Self.event(2)])
        await clock.waitForSleepers(1)
        backlog.append(Self.event(3))
        backlog.append(Self.event(4))
        clock.advance(by: StoreCommits<ManualClock>.delay)
        #expect(await appliedBatches.next() == [Self.event(3), Self.event(4)])
        #expect(await recordedBatches.next() == [Self.event(2), Self.event(3), Self.event(4)])

        // A wait that nothing came during records what it had, and applies nothing more.
        backlog.append(Self.event(5))
        #expect(await appliedBatches.next() == [Self.event(5)])
        await clock.waitForSleepers(1)
        clock.advance(by: StoreCommits<ManualClock>.delay)
        #expect(await recordedBatches.next() == [Self.event(5)])

        backlog.finish()
        #expect(await recordedBatches.next() == nil)
        await runner.value
        #expect(log.withLockedValue { $0 } == ["applied 1", "recorded 1", "applied 1", "applied 2", "recorded 3",
                                              "applied 1", "recorded 1"])
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
