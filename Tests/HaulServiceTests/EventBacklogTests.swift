import HaulCore
import Testing
@testable import HaulService

/// The events between the roster and the store: taken in batches, never lost, never reordered.
@Suite struct EventBacklogTests {
    static func event(_ n: Int) -> ManagerEvent {
        .progress(id: n, DownloadProgress(completed: Int64(n), batchBytes: 1, total: nil, bytesPerSecond: 0))
    }

    @Test func whatCameWhileNoOneReadIsTakenInOneBatchInOrder() async {
        let backlog = EventBacklog()
        for n in 0..<100 { backlog.append(Self.event(n)) }
        #expect(await backlog.next() == (0..<100).map(Self.event))
        backlog.append(Self.event(100))
        #expect(await backlog.next() == [Self.event(100)])
    }

    @Test func aFinishedBacklogGivesWhatIsLeftThenNil() async {
        let backlog = EventBacklog()
        backlog.append(Self.event(1))
        backlog.append(Self.event(2))
        backlog.finish()
        #expect(await backlog.next() == [Self.event(1), Self.event(2)])
        #expect(await backlog.next() == nil)
        #expect(await backlog.next() == nil)
    }

    @Test func aReaderWaitingWhenTheBacklogFinishesGetsNil() async {
        let backlog = EventBacklog()
        let reader = Task { await backlog.next() }
        backlog.finish()
        #expect(await reader.value == nil)
    }

    /// A producer and a reader at once (the service's two tasks): every event arrives once, in order,
    /// whichever way they interleave (a waiting reader, or a batch taken whole).
    @Test func aReaderBesideTheProducerGetsEveryEventOnceInOrder() async {
        let backlog = EventBacklog()
        let count = 20_000
        let reader = Task {
            var seen: [ManagerEvent] = []
            var batches = 0
            while let batch = await backlog.next() {
                #expect(!batch.isEmpty)
                seen += batch
                batches += 1
            }
            return (seen, batches)
        }
        let producer = Task {
            for n in 0..<count {
                backlog.append(Self.event(n))
                if n % 97 == 0 { await Task.yield() }
            }
            backlog.finish()
        }
        await producer.value
        let (seen, batches) = await reader.value
        #expect(seen == (0..<count).map(Self.event))
        #expect(batches >= 1 && batches <= count)
    }

    /// A client's backlog (`Service.subscribe`): one that stopped reading is let go once its events would
    /// pass the bound, instead of being held in memory without end.
    @Test func aBoundedBacklogRefusesWhatWouldPassItsBoundAndFinishes() async {
        let backlog = EventBacklog(capacity: 3)
        #expect(backlog.append(contentsOf: [Self.event(0), Self.event(1)]))
        #expect(backlog.append(Self.event(2)))
        #expect(!backlog.append(Self.event(3)))
        #expect(!backlog.append(Self.event(4)))
        #expect(await backlog.next() == [Self.event(0), Self.event(1), Self.event(2)])
        #expect(await backlog.next() == nil)
    }

    /// The bound counts what waits, not what passed: a reader that keeps up is never let go.
    @Test func aReaderThatKeepsUpIsNeverLetGo() async {
        let backlog = EventBacklog(capacity: 2)
        for n in 0..<100 {
            #expect(backlog.append(contentsOf: [Self.event(2 * n), Self.event(2 * n + 1)]))
            #expect(await backlog.next() == [Self.event(2 * n), Self.event(2 * n + 1)])
        }
    }

    /// A reader waiting when its task is cancelled (the response's task, a connection torn down) gets nil.
    @Test func aCancelledReaderGetsNil() async {
        let backlog = EventBacklog()
        let waiting = Task { await backlog.next() }
        waiting.cancel()
        #expect(await waiting.value == nil)
        let cancelledFirst = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await backlog.next()
        }
        #expect(await cancelledFirst.value == nil)
    }
}
