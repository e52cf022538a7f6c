import Foundation
import NIOConcurrencyHelpers
import SampleServer
import TestSupport
import Testing
@testable import HaulCore

/// Never start what cannot fit (issue 75): the check before the first byte, against a free-space probe the
/// test sets (the real file system's is `NoSpaceTests`'s), and the queue that waits for room.
@Suite struct RoomTests {
    /// A file system of `available` bytes that the test changes.
    final class Disk: Sendable {
        let available: NIOLockedValueBox<Int64>
        init(_ bytes: Int64) { available = NIOLockedValueBox(bytes) }
        var room: Room { Room { [available] _, _ in available.withLockedValue { $0 } } }
    }

    func job(_ server: SampleServer, _ name: String, in dir: TempDirectory) -> DownloadJob {
        DownloadJob(url: server.downloadURL(name), outputDirectory: dir.path)
    }

    func watch(_ manager: DownloadManager, until stop: @escaping @Sendable ([ManagerEvent]) -> Bool)
        async throws -> [ManagerEvent]
    {
        try await within(30, "manager events") {
            var seen: [ManagerEvent] = []
            for await event in manager.events {
                seen.append(event)
                if stop(seen) { break }
            }
            return seen
        }
    }

    @Test func runningDownloadsHoldWhatTheyStillNeed() throws {
        let dir = TempDirectory()
        let directory = try OutputDirectory(dir.path)
        let room = Disk(20 << 20).room
        let first = room.ticket()
        try first.take(needed: 15 << 20, total: 15 << 20, directory: directory)
        let second = room.ticket()
        #expect(throws: HaulError.self) { try second.take(needed: 10 << 20, total: 10 << 20, directory: directory) }
        do {
            try second.take(needed: 10 << 20, total: 10 << 20, directory: directory)
        } catch {
            #expect(error.category == .fileIO && error.reason == .noRoom(needed: 10 << 20))
            #expect(error.message == "not enough free space: needs 10.0 MiB, 20.0 MiB free in \(dir.path)"
                        + " (15.0 MiB of it still needed by running downloads)")
        }
        // The first has 10 MiB on disk: it still needs 5, and the second fits beside it.
        first.progress(completed: 10 << 20)
        try second.take(needed: 10 << 20, total: 10 << 20, directory: directory)
        // A third fits once the others end.
        let third = room.ticket()
        #expect(throws: HaulError.self) { try third.take(needed: 10 << 20, total: 10 << 20, directory: directory) }
        first.release()
        second.release()
        try third.take(needed: 10 << 20, total: 10 << 20, directory: directory)
    }

    /// Without a watch (a plain run): exit 3 before the first byte, and no part left.
    @Test func aDownloadThatCannotFitFailsHavingWrittenNothing() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            var downloader = Downloader()
            downloader.room = Disk(5 << 20).room
            let manager = DownloadManager(downloader: downloader)
            let id = await manager.add(job(server, "medium.bin", in: dir))
            _ = try await watch(manager) { $0.contains { if case .state(id, .failed) = $0 { true } else { false } } }
            guard case .failed(let error)? = await manager.state(of: id) else { Issue.record("not failed"); return }
            #expect(error.reason == .noRoom(needed: 20 << 20))
            #expect(await manager.exitCode == 3)
            #expect(dir.listing().isEmpty, "\(dir.listing())")
        }
    }

    /// With a watch (the service): it waits as no space, and starts once the room is there, when the watch
    /// looks again on its clock.
    @Test func theQueueWaitsForRoomAndLooksAgainOnItsClock() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let disk = Disk(5 << 20)
            var downloader = Downloader()
            downloader.room = disk.room
            let clock = ManualClock()
            let manager = DownloadManager(downloader: downloader,
                                          roomWatch: .init(clock: MomentClock(clock), interval: .seconds(30)))
            let id = await manager.add(job(server, "medium.bin", in: dir))
            _ = try await watch(manager) { $0.contains { event in
                if case .state(id, let state) = event { state.isWaitingForRoom } else { false }
            } }
            #expect(await manager.state(of: id)?.isWaitingForRoom == true)
            #expect(dir.listing().isEmpty)
            await clock.waitForSleepers()
            // Not yet room: it waits on.
            clock.advance(by: .seconds(30))
            await clock.waitForSleepers()
            #expect(await manager.state(of: id)?.isWaitingForRoom == true)
            disk.available.withLockedValue { $0 = 1 << 30 }
            clock.advance(by: .seconds(30))
            _ = try await watch(manager) { $0.contains(.state(id: id, .done)) }
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }

    /// A download waiting for room is looked at again when another ends.
    @Test func anotherDownloadEndingMakesTheQueueLookAgain() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let disk = Disk(5 << 20)
            var downloader = Downloader()
            downloader.room = disk.room
            let manager = DownloadManager(downloader: downloader, concurrency: 1,
                                          roomWatch: .init(clock: MomentClock(ManualClock()), interval: .seconds(30)))
            let big = await manager.add(job(server, "medium.bin", in: dir))
            _ = try await watch(manager) { $0.contains { event in
                if case .state(big, let state) = event { state.isWaitingForRoom } else { false }
            } }
            disk.available.withLockedValue { $0 = 1 << 30 }
            let small = await manager.add(job(server, "small.bin", in: dir))
            _ = try await watch(manager) { seen in
                seen.contains(.state(id: small, .done)) && seen.contains(.state(id: big, .done))
            }
        }
    }
}
