import Foundation
import HaulCore
import HaulServiceClient
import Testing
import TestSupport
@testable import HaulService

/// The service's intervals are timed on the clock it is handed (`ServiceClock`), never on the system's: a
/// manual clock drives each of them here, with no sleep and no wall-clock bound.
@Suite struct ServiceClockTests {
    typealias F = StoreFixtures

    /// The -wal is copied into the file a minute after the last checkpoint, on the store's clock: not at 59 s,
    /// at the first write from 60 s on.
    @Test func theStoreCheckpointsAMinuteAfterTheLastOnItsClock() throws {
        let clock = ManualClock()
        let directory = TempDirectory()
        let store = try Store(directory: directory.path, clock: MomentClock(clock))
        _ = try store.insert(F.job("a"), file: "a", added: F.time(0))
        clock.advance(by: .seconds(59))
        _ = try store.insert(F.job("b"), file: "b", added: F.time(0))
        // A checkpoint would run on the writer's queue after the write: this waits for it.
        store.pool.writeWithoutTransaction { _ in }
        // The file alone does not hold the rows yet (nor, before any checkpoint, the tables).
        #expect(((try? StoreCheckpointTests.rowsInTheFileAlone(directory)) ?? 0) < 2)
        clock.advance(by: .seconds(1))
        _ = try store.insert(F.job("c"), file: "c", added: F.time(0))
        store.pool.writeWithoutTransaction { _ in }
        #expect(try StoreCheckpointTests.rowsInTheFileAlone(directory) == 3)
        try store.close()
    }

    /// An outbox on a manual clock whose writer has taken a notification (its write is under way from now), and
    /// the session's watchdog over it.
    static func writeUnderWay() async -> (ManualClock, SessionOutbox, Task<Bool, Never>) {
        let clock = ManualClock()
        let outbox = SessionOutbox(notificationLimit: 4, clock: MomentClock(clock))
        #expect(outbox.notify("n1"))
        #expect(await outbox.next() == "n1")
        let watchdog = Task { await outbox.stalls(longerThan: RPCSession.stallLimit) }
        return (clock, outbox, watchdog)
    }

    /// The WebSocket session's watchdog looks every quarter of `stallLimit` on the outbox's clock: a write under
    /// way for the whole limit is not yet a stall, one under way past it is (the session closes).
    @Test func aWriteUnderWayPastTheStallLimitIsAStall() async {
        let (clock, outbox, watchdog) = await Self.writeUnderWay()
        let quarter = RPCSession.stallLimit / 4
        for _ in 0..<4 {
            await clock.waitForSleepers()
            clock.advance(by: quarter)
        }
        // It looked at the limit itself and sleeps again.
        await clock.waitForSleepers()
        #expect(!outbox.isStalled(longerThan: RPCSession.stallLimit))
        clock.advance(by: quarter)
        #expect(await watchdog.value)
    }

    /// A write that goes out before the limit is no stall, however long the session then waits.
    @Test func aWriteDoneInTimeIsNoStall() async {
        let (clock, outbox, watchdog) = await Self.writeUnderWay()
        let quarter = RPCSession.stallLimit / 4
        for step in 0..<8 {
            if step == 3 { outbox.wrote() }
            await clock.waitForSleepers()
            clock.advance(by: quarter)
        }
        await clock.waitForSleepers()
        watchdog.cancel()
        #expect(await watchdog.value == false)
    }

    /// With nothing queued and no client attached, the service ends after `idleExit` on its clock.
    @Test func theIdleExitIsTimedOnTheServiceClock() async throws {
        let clock = ManualClock()
        let state = TempDirectory()
        let directory = StateDirectory(path: state.path)
        try directory.prepare()
        let store = try Store(directory: directory.path)
        var configuration = Service.Configuration(directory: directory)
        configuration.idleExit = .seconds(60)
        let service = Service(configuration: configuration, store: store,
                              clock: ServiceClock(MomentClock(clock), date: { F.time(0) }))
        // A client attaches and goes: the service is idle from then.
        await service.unsubscribe(await service.subscribe())
        await clock.waitForSleepers()
        clock.advance(by: .seconds(59))
        #expect(clock.sleeperCount == 1, "not idle for long enough yet")
        clock.advance(by: .seconds(1))
        #expect(await service.waitForEnd() == .idle)
        try store.close()
    }
}
