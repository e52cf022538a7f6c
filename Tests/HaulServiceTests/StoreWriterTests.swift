import Foundation
import GRDB
import HaulCore
import Testing
import TestSupport
@testable import HaulService

/// Progress at most once a second per download, on a manual clock; everything else at once.
@Suite struct StoreWriterTests {
    typealias F = StoreFixtures

    struct Fixture {
        let directory = TempDirectory()
        let clock = ManualClock()
        let store: Store
        var writer: StoreWriter

        init(downloads: Int = 1) throws {
            store = try Store(directory: directory.path)
            writer = StoreWriter(store: store, clock: clock, now: { F.time(0) })
            for n in 0..<downloads { _ = try store.insert(F.job("\(n)"), file: "\(n)", added: F.time(0)) }
        }

        func completed(_ id: DownloadID) throws -> Int64? { try store.find(id)?.completed }

        /// Rows the writer connection has inserted, updated or deleted so far.
        func rowWrites() -> Int { store.pool.writeWithoutTransaction { $0.totalChangesCount } }
    }

    static func progress(_ id: DownloadID, _ completed: Int64) -> ManagerEvent {
        .progress(id: id, DownloadProgress(completed: completed, batchBytes: 1, total: 1_000_000, bytesPerSecond: 1))
    }

    @Test func progressIsWrittenAtMostOnceASecond() throws {
        var f = try Fixture()
        try f.writer.record([.state(id: 1, .connecting), .state(id: 1, .downloading), Self.progress(1, 10)])
        #expect(try f.completed(1) == 10)  // a download's first progress at once

        f.clock.advance(by: .milliseconds(500))
        try f.writer.record([Self.progress(1, 20)])
        #expect(try f.completed(1) == 10)
        f.clock.advance(by: .milliseconds(499))
        try f.writer.record([Self.progress(1, 30)])
        try f.writer.flushDue()
        #expect(try f.completed(1) == 10)
        #expect(f.writer.pendingCount == 1)

        f.clock.advance(by: .milliseconds(1))  // a second since the last write
        try f.writer.record([Self.progress(1, 40)])
        #expect(try f.completed(1) == 40)
        #expect(f.writer.pendingCount == 0)

        f.clock.advance(by: .milliseconds(999))
        try f.writer.record([Self.progress(1, 50)])
        #expect(try f.completed(1) == 40)
        f.clock.advance(by: .milliseconds(1))
        try f.writer.flushDue()  // the tick, with no new event
        #expect(try f.completed(1) == 50)
    }

    @Test func pendingProgressIsWrittenBeforeAStateChange() throws {
        var f = try Fixture(downloads: 2)
        try f.writer.record([Self.progress(1, 10), Self.progress(2, 10)])
        f.clock.advance(by: .milliseconds(100))
        try f.writer.record([Self.progress(1, 70), Self.progress(2, 70)])
        #expect(try f.completed(1) == 10)

        try f.writer.record([.state(id: 1, .paused)])
        let row = try #require(try f.store.find(1))
        #expect(row.state == .paused)
        #expect(row.completed == 70)
        #expect(try f.completed(2) == 10)  // another download's progress still waits
    }

    @Test func progressAfterAStateChangeInTheSameBatchWaitsItsTurn() throws {
        var f = try Fixture()
        try f.writer.record([Self.progress(1, 10)])
        f.clock.advance(by: .milliseconds(100))
        try f.writer.record([Self.progress(1, 20), .state(id: 1, .cancelled), Self.progress(1, 30)])
        let row = try #require(try f.store.find(1))
        #expect(row.state == .cancelled)
        #expect(row.completed == 20)
        try f.writer.flush()
        #expect(try f.completed(1) == 30)
    }

    @Test func flushWritesEveryPendingProgress() throws {
        var f = try Fixture(downloads: 3)
        try f.writer.record((1...3).map { Self.progress($0, 1) })
        f.clock.advance(by: .milliseconds(10))
        try f.writer.record((1...3).map { Self.progress($0, 99) })
        #expect(f.writer.pendingCount == 3)
        try f.writer.flush()
        #expect(f.writer.pendingCount == 0)
        #expect(try f.store.all().map(\.completed) == [99, 99, 99])
    }

    @Test func aRemovedDownloadsProgressIsDropped() throws {
        var f = try Fixture()
        try f.writer.record([Self.progress(1, 10)])
        try f.writer.record([Self.progress(1, 20), .state(id: 1, .cancelled), Self.progress(1, 30), .removed(id: 1)])
        #expect(f.writer.pendingCount == 0)
        #expect(try f.store.count() == 0)
    }

    @Test func aHundredDownloadsAtTenEventsASecondWriteAboutAHundredRowsASecond() throws {
        var f = try Fixture(downloads: 100)
        let start = f.rowWrites()
        // Ten seconds of ten progress events a second from each download, delivered in batches of 100.
        for tick in 1...100 {
            try f.writer.record((1...100).map { Self.progress($0, Int64(tick)) })
            f.clock.advance(by: .milliseconds(100))
        }
        let writes = f.rowWrites() - start
        // Each download: its first progress, then one a second. Without coalescing: 10,000.
        #expect(writes <= 100 * 11)
        #expect(writes >= 100 * 10)
        try f.writer.flush()
        #expect(try f.store.all().allSatisfy { $0.completed == 100 })
    }

    @Test func progressOfAFailedWriteStaysPending() throws {
        var f = try Fixture(downloads: 2)
        try f.writer.record([Self.progress(1, 10)])
        try f.store.close()
        f.clock.advance(by: .seconds(2))
        let error = #expect(throws: StoreError.self) {
            try f.writer.record([Self.progress(1, 20), .state(id: 2, .connecting), Self.progress(2, 5)])
        }
        #expect(error?.message.hasPrefix("cannot write the queue") == true)
        #expect(f.writer.pendingCount == 2)
    }

    @Test func startedAndFinishedTimesComeFromTheInjectedWallClock() throws {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        let id = try store.insert(F.job("a"), file: "a", added: F.time(0))
        var writer = StoreWriter(store: store, clock: ManualClock(), now: { F.time(42) })
        try writer.record([.state(id: id, .connecting), .state(id: id, .done)])
        let row = try #require(try store.find(id))
        #expect(row.started == F.time(42))
        #expect(row.finished == F.time(42))
    }
}
