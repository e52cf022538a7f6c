import Foundation
import NIOConcurrencyHelpers
import SampleServer
import TestSupport
import Testing
@testable import HaulCore

/// Segmented downloads (`-s N`) against the sample server.
@Suite struct SegmentTests {
    @Test func fourSegmentsArriveIdenticalOverFourConnections() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 16 << 20) { (server) async throws in
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir, segments: 4))
            #expect(try result.get().bytes == 20 << 20)
            #expect(facts == [.split(connections: 4)])
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
            // A 1 MiB probe, then its connection's next range and three more connections.
            #expect(server.stats.rangeRequests >= 5)
            // Every request asks for an exact range, so no byte is asked for twice but by a split at the tail:
            // the cut connection stops at the new end. What the server had already sent past it, in that
            // connection's socket buffers, is sent again; that depends on how far behind the consumer is (up
            // to the kernel's receive buffer: 3.75 MiB, then 8.6 MiB of 20 under TSan on a busy machine), so
            // the bound on bytes sent only rules out the whole file twice.
            #expect(server.stats.openRangeRequests == 0)
            #expect(server.stats.bodyBytesSent < 2 * (20 << 20), "\(facts)")
            #expect(dir.listing() == ["medium.bin"])
        }
    }

    /// The segments write at four places of the part at once: each reserves the blocks ahead of its writes (on
    /// ext4 a direct write into a hole holds the file's lock for the whole device round trip, so the four took
    /// turns). Seen from outside while the bytes still come: the part of a 20 MiB file (less than a window
    /// ahead of its first segment) is the file's size and has all its blocks.
    @Test func theSegmentsWriteIntoBlocksReservedForTheWholeFile() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 4 << 20) { (server) async throws in
            let part = dir.file("medium.bin.part")
            var reservedEarly = false
            let (result, facts) = await Downloader.quickRetries.runCollectingFacts(
                DownloadJob.sample(server, "medium.bin", dir, segments: 4)) { progress in
                var info = stat()
                guard progress.completed < 20 << 20, stat(part, &info) == 0 else { return }
                if info.st_size == 20 << 20, Int64(info.st_blocks) * 512 >= 20 << 20 { reservedEarly = true }
            }
            #expect(try result.get().bytes == 20 << 20)
            #expect(facts == [.split(connections: 4)])
            #expect(reservedEarly, "the part had all its blocks before its last bytes came")
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }

    /// A segment's write reserves the blocks from its offset to a window ahead, within the file's size: never
    /// the whole size a server announced before its bytes come (one that claims 64 GiB and sends a page costs
    /// the disk a window, not 64 GiB). A write inside a reservation reserves nothing more.
    /// A part as a download claims it (opened, then its fstat taken), reserving ahead within `total` bytes.
    private func reservingPart(in dir: TempDirectory, total: Int64) throws -> (file: PartFile, fd: Int32) {
        let path = dir.file("data.part")
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        try #require(fd >= 0)
        var claimed = stat()
        try #require(fstat(fd, &claimed) == 0)
        let file = PartFile(descriptor: fd, path: path, claimed: claimed)
        file.reserveAhead(of: total)
        return (file, fd)
    }

    /// Bytes the file system holds for `file`.
    private func allocated(_ file: PartFile) throws -> Int64 { Int64(try file.status().st_blocks) * 512 }

    @Test func segmentWritesReserveAWindowAheadNotTheAnnouncedSize() throws {
        let dir = TempDirectory()
        let (file, _) = try reservingPart(in: dir, total: 64 << 30)
        defer { try? file.close() }
        let window = PartFile.reserveWindow

        try file.write(ByteBatch([UInt8](repeating: 7, count: 4096)), at: 32 << 30)
        guard try allocated(file) >= window else { return }  // a file system that cannot reserve
        #expect(try allocated(file) < 2 * window, "one window, not the 64 GiB announced")
        #expect(try file.size() == (32 << 30) + window)
        #expect(!file.holdsOnlyReservation, "a byte written")

        try file.write(ByteBatch([UInt8](repeating: 8, count: 4096)), at: 0)
        #expect(try allocated(file) >= 2 * window && allocated(file) < 3 * window, "a window at each place written")
        try file.write(ByteBatch([UInt8](repeating: 9, count: 4096)), at: 4096)
        #expect(try allocated(file) < 3 * window, "inside a reservation: nothing more")
        // The last window stops at the file's size.
        try file.write(ByteBatch([UInt8](repeating: 1, count: 4096)), at: (64 << 30) - 8192)
        #expect(try file.size() == 64 << 30)
        // A cut takes the reservations past it along: a write there reserves again.
        try file.truncate(to: 0)
        #expect(try allocated(file) == 0)
        try file.write(ByteBatch([UInt8](repeating: 2, count: 4096)), at: 4096)
        #expect(try allocated(file) >= window, "reserved again after the cut")
    }

    /// What a stopped segmented download gives back: the blocks reserved ahead that no write reached and no
    /// resume state vouches for. Written bytes stay whatever the state says (a journal may vouch for them).
    @Test func unwrittenReservationsGoBackWrittenBytesStay() throws {
        let dir = TempDirectory()
        let (file, fd) = try reservingPart(in: dir, total: 64 << 30)
        defer { try? file.close() }
        let window = PartFile.reserveWindow
        try file.write(ByteBatch([UInt8](repeating: 7, count: 5000)), at: 0)
        try file.write(ByteBatch([UInt8](repeating: 8, count: 4096)), at: 32 << 30)
        guard try allocated(file) >= 2 * window else { return }  // a file system that cannot reserve
        // A range the state vouches for (from an earlier run) inside a reservation stays too.
        let vouched = ByteRange(1 << 20, 2 << 20)
        let released = file.releaseUnwrittenReservations(keeping: [vouched])
        #expect(released == 2 * window - 5000 - 4096 - vouched.count)
        let left = try allocated(file)
        #expect(left <= vouched.count + 4 * 4096, "\(left) bytes on disk")
        #expect(try file.size() == (32 << 30) + window, "the size stays")
        var back = [UInt8](repeating: 0, count: 5000)
        #expect(pread(fd, &back, 5000, 0) == 5000 && back.allSatisfy { $0 == 7 })
        #expect(pread(fd, &back, 4096, 32 << 30) == 4096 && back.prefix(4096).allSatisfy { $0 == 8 })
        // Released ranges are reserved again when written again.
        try file.write(ByteBatch([UInt8](repeating: 9, count: 4096)), at: 16 << 20)
        #expect(try allocated(file) >= window)
    }

    /// A segmented download cancelled early holds about what it fetched, not a window ahead of each of its
    /// connections, and resumes to the same file.
    @Test func aCancelledSegmentedDownloadGivesItsReservationsBack() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 1 << 20) { (server) async throws in
            let manager = DownloadManager(concurrency: 1)
            let id = await manager.add(DownloadJob.sample(server, "large.bin", dir, segments: 4))
            try await within(.seconds(60), "the cancel, then the end") {
                var cancelled = false
                for await event in manager.events {
                    switch event {
                    case .progress(id, let progress) where !cancelled && progress.completed >= 2 << 20:
                        cancelled = true
                        await manager.cancel(id)
                    case .state(id, let state) where state.isFinished:
                        await manager.waitUntilIdle()
                        await manager.finishEvents()
                    default:
                        break
                    }
                }
            }
            #expect(await manager.state(of: id) == .cancelled)
            var info = stat()
            try #require(stat(dir.file("large.bin.part"), &info) == 0)
            #expect(Int64(info.st_blocks) * 512 < PartFile.reserveWindow, "\(info.st_blocks * 512) bytes on disk")
            server.setRate(nil)
            let (result, _) = await runQuickly(DownloadJob.sample(server, "large.bin", dir, segments: 4))
            #expect(throws: Never.self) { try result.get() }
            #expect(try FileDigest.hex(of: dir.file("large.bin")) == expectedSHA256("large.bin"))
        }
    }

    /// medium.bin over four connections from a sample server that cuts the first two answers longer than 3 MiB
    /// there; the file is checked whole.
    private func fetchWithTwoConnectionsCut(retries: Int) async throws -> ([DownloadFact], SampleServerStats) {
        let dir = TempDirectory()
        return try await withSampleServer(rate: 16 << 20) { (server) async throws in
            var faults = SampleServerFaults()
            faults.dropAfterBytes = 3 << 20
            faults.dropLimit = 2
            server.setFaults(faults)
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir, segments: 4,
                                                                      retries: retries))
            #expect(throws: Never.self) { try result.get() }
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
            return (facts, server.stats)
        }
    }

    @Test func droppedSegmentsResumeAndTheFileIsIdentical() async throws {
        let (facts, stats) = try await fetchWithTwoConnectionsCut(retries: 5)
        // Each dropped connection asked for the rest of its range again at once: no retry of the download, and
        // nothing given up.
        #expect(!facts.contains { $0.retry != nil }, "\(facts)")
        #expect(!facts.contains { $0.kind == "connection-dropped" }, "\(facts)")
        // The resumed segments ask for exact ranges (their starts: where each connection stopped); bytes sent
        // twice are only what the dropped connections' buffers held (as above).
        #expect(stats.openRangeRequests == 0)
        #expect(stats.bodyBytesSent < 2 * (20 << 20))
    }

    /// With `--retries 0` a dropped connection is not asked again: what it had left goes to the others, and the
    /// download still ends whole in its one attempt.
    @Test func droppedConnectionsWithoutRetriesGiveTheirRestToTheOthers() async throws {
        let (facts, _) = try await fetchWithTwoConnectionsCut(retries: 0)
        #expect(facts.filter { $0.kind == "connection-dropped" }.count == 2, "\(facts)")
    }

    /// A server that limits how many connections a client may have at once (503 to the others, as nginx's
    /// `limit_conn` answers): the pieces of the connections it refuses go to those it serves, and the download
    /// ends whole in its first attempt, with no retry and no wait.
    @Test func piecesOfRefusedConnectionsGoToTheServedOnes() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 16 << 20) { (server) async throws in
            var faults = SampleServerFaults()
            faults.bodiesAtOnce = 2
            server.setFaults(faults)
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir, segments: 4))
            #expect(throws: Never.self) { try result.get() }
            #expect(!facts.contains { $0.retry != nil }, "\(facts)")
            #expect(facts.contains {
                if case .connectionDropped(_, let reason) = $0 { reason.httpStatus == 503 } else { false }
            }, "\(facts)")
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }

    @Test func aSegmentedRunInterruptedWithHolesResumesOnlyTheMissingBytes() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 16 << 20) { (server) async throws in
            // Every answer longer than 2 MiB is cut there, so every connection fails and the run ends with
            // holes. (With only the first answer cut, the others could steal so much of that connection's range,
            // as they ran out of work, that it ended before the cut and the file was whole: a TSan run did, once
            // the other connections started together.)
            var faults = SampleServerFaults()
            faults.dropAfterBytes = 2 << 20
            faults.dropLimit = nil
            server.setFaults(faults)
            let (first, _) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir, segments: 4, retries: 0))
            #expect(throws: HaulError.self) { try first.get() }
            guard case .found(let state) = ResumeState.load(from: dir.file("medium.bin.part.json")) else {
                Issue.record("no resume state after the interrupted run")
                return
            }
            let kept = state.completed.reduce(0) { $0 + $1.count }
            #expect(kept > 0)
            server.setFaults(SampleServerFaults())
            server.resetStats()
            let (second, _) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir, segments: 4))
            #expect(throws: Never.self) { try second.get() }
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
            // Only what was missing was asked for again: the second run's ranges reach into what the part kept
            // by at most a little at splits. (Not counted in bytes sent: those also hold what was in flight when
            // a split cut an answer short, up to the sockets' buffers, megabytes on a busy machine under TSan.)
            let asked = server.stats.bodies.map { ByteRange(Int64($0.lowerBound), Int64($0.upperBound)) }
            #expect(!asked.isEmpty)
            let askedAgain = asked.reduce(Int64(0)) { total, range in
                total + range.count - ByteRange.subtract(state.completed, from: range).reduce(0) { $0 + $1.count }
            }
            #expect(askedAgain <= 1 << 20, "\(server.stats.bodies)")
        }
    }

    @Test func aServerThatIgnoresRangesFallsBackToOneConnection() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            var faults = SampleServerFaults()
            faults.ignoreRange = true
            server.setFaults(faults)
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir, segments: 4))
            #expect(throws: Never.self) { try result.get() }
            #expect(facts == [.oneConnection(reason: .noRanges)], "\(facts)")
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }

    @Test func smallFilesUseOneConnection() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            let (result, _) = await runQuickly(DownloadJob.sample(server, "small.bin", dir, segments: 8))
            #expect(try result.get().bytes == 1 << 20)
            #expect(server.stats.getRequests == 1)  // the 1 MiB probe was the whole file
        }
    }

    /// The other connections open while the probe asks for the size: HEAD requests on connections of their
    /// own, sent with it, whose connections the segments then take from curl's cache. Once per origin: the
    /// next download there finds the connections the first one left.
    @Test func theOtherConnectionsOpenBesideTheProbeOncePerOrigin() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            let (first, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir, segments: 4))
            #expect(throws: Never.self) { try first.get() }
            #expect(facts.first == .split(connections: 4), "\(facts)")
            #expect(server.stats.headRequests == 3)
            var again = DownloadJob.sample(server, "medium.bin", dir, segments: 4)
            again.outputName = "again.bin"
            let (second, _) = await runQuickly(again)
            #expect(throws: Never.self) { try second.get() }
            #expect(server.stats.headRequests == 3, "the second download found the first one's connections")
            #expect(try FileDigest.hex(of: dir.file("again.bin")) == expectedSHA256("medium.bin"))
        }
    }

    /// The other connections do not wait for the probe's body: its head says ranges work and the size,
    /// and they start then. Throttled so that the probe's 1 MiB takes seconds: all four requests are out
    /// while it is still arriving.
    @Test func theOtherConnectionsStartWhileTheProbeIsStillArriving() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 256 << 10) { (server) async throws in
            let seen = NIOLockedValueBox<Int64?>(nil)
            // A task of its own, so that stopping the download does not cancel the test itself.
            let (result, facts) = await Task {
                await Downloader().runCollectingFacts(DownloadJob.sample(server, "medium.bin", dir, segments: 4)) { progress in
                    guard seen.withLockedValue({ $0 }) == nil, server.stats.getRequests >= 4 else { return }
                    seen.withLockedValue { $0 = progress.completed }
                    withUnsafeCurrentTask { $0?.cancel() }  // seen enough: stop here
                }
            }.value
            #expect(throws: HaulError.self) { try result.get() }
            #expect(facts.first == .split(connections: 4), "\(facts)")
            let completed = try #require(seen.withLockedValue { $0 })
            #expect(completed < 1 << 20, "all four asked before the probe's megabyte was in: \(completed)")
        }
    }

    /// Where every connection is fast (here: the bar set at a byte per second, judged on a manual clock
    /// after all four brought bytes), one goes on alone and the others give their ranges back; the file is
    /// still whole and identical.
    @Test func whenNothingLimitsAConnectionOneGoesOnAlone() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 4 << 20) { (server) async throws in
            let clock = ManualClock()
            let downloader = Downloader.racingAtAByteASecond(clock)
            var advanced = false
            let (result, facts) = await downloader.runCollectingFacts(
                DownloadJob.sample(server, "medium.bin", dir, segments: 4)
            ) { progress in
                // Four connections at 4 MiB/s each: by 4 MiB all four have brought bytes.
                guard !advanced, progress.completed >= 4 << 20 else { return }
                advanced = true
                clock.advance(by: .seconds(1))
            }
            #expect(throws: Never.self) { try result.get() }
            #expect(facts.first == .split(connections: 4), "\(facts)")
            #expect(facts.contains { if case .oneConnection(.notLimited) = $0 { true } else { false } }, "\(facts)")
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }

    /// A limit that starts after the first bytes (nginx's `limit_rate_after`) passes the race: the one that
    /// goes on alone then brings far less than the four did together, and the others come back. Here the
    /// bar is a byte per second (the race says "not limited"), and the manual clock then jumps 10 s while
    /// the lone connection brings a few megabytes.
    @Test func whenTheOneThatWentOnSlowsTheOthersComeBack() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 4 << 20) { (server) async throws in
            let clock = ManualClock()
            let downloader = Downloader.racingAtAByteASecond(clock)
            let phase = NIOLockedValueBox(0)
            let (result, facts) = await downloader.runCollectingFacts(
                DownloadJob.sample(server, "medium.bin", dir, segments: 4)
            ) { progress in
                if phase.withLockedValue({ $0 }) == 0, progress.completed >= 4 << 20 {
                    phase.withLockedValue { $0 = 1 }
                    clock.advance(by: .seconds(1))  // the race's verdict: one goes on
                } else if phase.withLockedValue({ $0 }) == 1, progress.completed >= 7 << 20 {
                    phase.withLockedValue { $0 = 2 }
                    clock.advance(by: .seconds(10))  // ... and brings 3 MiB in 10 s (under the 30 s stall timeout)
                }
            }
            #expect(throws: Never.self) { try result.get() }
            #expect(facts.contains { if case .oneConnection(.notLimited) = $0 { true } else { false } }, "\(facts)")
            #expect(facts.contains { if case .splitAgain(connections: 4, _) = $0 { true } else { false } }, "\(facts)")
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }

    /// A limit per connection keeps them all: at 4 MiB/s each, far below the bar, nobody is sent home.
    @Test func aLimitPerConnectionKeepsThemAll() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 4 << 20) { (server) async throws in
            let clock = ManualClock()
            var downloader = Downloader(clock: clock)
            downloader.raceWindow = .seconds(1)
            var advanced = false
            let (result, facts) = await downloader.runCollectingFacts(
                DownloadJob.sample(server, "medium.bin", dir, segments: 4)
            ) { progress in
                guard !advanced, progress.completed >= 4 << 20 else { return }
                advanced = true
                clock.advance(by: .seconds(1))
            }
            #expect(throws: Never.self) { try result.get() }
            #expect(facts == [.split(connections: 4)], "\(facts)")
        }
    }
}

extension Downloader {
    /// A downloader whose race calls any connection unlimited (the bar at a byte per second), judged after a
    /// window of 1 s on `clock`.
    static func racingAtAByteASecond(_ clock: ManualClock) -> Downloader {
        var downloader = Downloader(clock: clock)
        downloader.notLimited = 1
        downloader.raceWindow = .seconds(1)
        return downloader
    }
}

@Suite struct SegmentStartTests {
    /// `-s 4`: while the probe's body is still arriving, the three other connections have asked for their
    /// pieces, and the rest of the probe's piece waits with the curl thread to be asked for the moment the
    /// probe ends (not once the probe's reader has written its bytes: then it left 6-9 ms after the others,
    /// and against a limit per connection the download ends with the last piece); the file comes whole.
    /// Every answer is held after 256 KiB, not only the probe's: a connection that ended its piece would
    /// rightly take the rest of the probe's piece while nobody has begun it (under the thread sanitizer, on
    /// the CI machine, that happened before the test looked).
    @Test func theRestOfTheProbesPieceFollowsTheProbe() async throws {
        let size = 8 << 20
        let server = try HeldHeadServer(size: size, holdingBodiesAfter: 256 << 10)
        defer { server.stop() }
        server.releaseHeads()
        let dir = TempDirectory()
        let events = TransferEvents()
        let downloader = Downloader(driver: events.driver())
        var job = DownloadJob(url: server.url, outputDirectory: dir.path)
        job.segments = 4
        // No stall timeout: the held answers must not give up while the test takes its time (under the thread
        // sanitizer, beside the other suites, it took over 30 s: the probe failed, and another worker took the
        // rest of its piece).
        job.transfer.stallTimeout = 0
        let download = Task { [downloader, job] in await downloader.runCollectingFacts(job) }
        // The probe (bytes 0 to 1 MiB - 1) and the three other pieces (2 MiB each from 2 MiB), each held after
        // 256 KiB.
        let gets = await server.waitForGets(4)
        #expect(gets?.count == 4, "\(String(describing: gets))")
        #expect(gets?.contains { $0.hasPrefix("GET ") } ?? false)
        try await within(20, "the rest of the probe's piece waiting to follow the probe") {
            await events.waitForAny(.waitsForTheTransferBefore)
        }
        #expect(!server.requests.contains { $0.lowercased().contains("range: bytes=1048576-") },
                "the rest of the probe's piece is not asked for before the probe ends: \(server.requests)")
        server.releaseBodies()
        let (result, _) = try await within(60, "the download") { await download.value }
        let path = try result.get().path
        let cycle = (0..<251).map { UInt8($0) }
        var expected: [UInt8] = []
        expected.reserveCapacity(size)
        while expected.count < size { expected += cycle.prefix(size - expected.count) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(expected))
        #expect(server.requests.contains { $0.lowercased().contains("range: bytes=1048576-2097151") },
                "\(server.requests)")
        #expect(server.accepted == 4, "four connections for -s 4: \(server.requestConnections)")
    }
}
