import Foundation
import NIOConcurrencyHelpers
import SampleServer
import TestSupport
import Testing
@testable import HaulCore

@Suite struct SegmentPlanTests {
    @Test func idleWorkersStealTheBackHalfOfTheLargestRange() {
        let plan = SegmentPlan(missing: [ByteRange(0, 64)], minimumSplit: 4)
        #expect(plan.claim(for: 0) == ByteRange(0, 64))
        #expect(plan.claim(for: 1) == ByteRange(32, 64))
        #expect(plan.end(of: 0) == 32)
        #expect(plan.claim(for: 2) == ByteRange(16, 32))  // a tie between 0 and 1: the lower worker
        _ = plan.advance(1, to: 60)
        // Worker 1 has 4 bytes left: below 2 * minimumSplit, it is not split; 0 and 2 tie again.
        #expect(plan.claim(for: 3) == ByteRange(8, 16))
        #expect(plan.end(of: 0) == 8)
    }

    @Test func theMissingBytesArePreSplitIntoOnePiecePerConnection() {
        let plan = SegmentPlan(missing: [ByteRange(0, 100)], parts: 4, minimumSplit: 10)
        let pieces = (0..<4).compactMap { plan.claim(for: $0) }
        #expect(pieces == [ByteRange(0, 25), ByteRange(25, 50), ByteRange(50, 75), ByteRange(75, 100)])
        let tiny = SegmentPlan(missing: [ByteRange(0, 30)], parts: 4, minimumSplit: 10)
        #expect(tiny.claim(for: 0) == ByteRange(0, 15))
        #expect(tiny.claim(for: 1) == ByteRange(15, 30))
    }

    @Test func missingRangesAreHandedOutFirstInOrder() {
        let plan = SegmentPlan(missing: [ByteRange(10, 20), ByteRange(30, 40)], minimumSplit: 100)
        #expect(plan.claim(for: 0) == ByteRange(10, 20))
        #expect(plan.claim(for: 1) == ByteRange(30, 40))
        #expect(plan.claim(for: 2) == nil)
    }

    @Test func aBatchPastAShrunkenEndIsCut() async throws {
        let plan = SegmentPlan(missing: [ByteRange(0, 100)], minimumSplit: 10)
        _ = plan.claim(for: 0)
        _ = plan.claim(for: 1)  // worker 0 now ends at 50
        #expect(plan.advance(0, to: 40) == 50)
        #expect(plan.end(of: 0) == 50)
    }
}

/// Segmented downloads (`-s N`) against the sample server.
@Suite struct SegmentTests {
    @Test func fourSegmentsArriveIdenticalOverFourConnections() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 16 << 20) { (server) async throws in
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir, segments: 4))
            #expect(try result.get().bytes == 20 << 20)
            #expect(facts.isEmpty)
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
            // A 1 MiB probe, then four ranged connections.
            #expect(server.stats.rangeRequests >= 5)
            // Every request asks for an exact range: only a split at the tail can send a little twice.
            #expect(server.stats.bodyBytesSent < (20 << 20) + (2 << 20))
            #expect(dir.listing() == ["medium.bin"])
        }
    }

    @Test func droppedSegmentsResumeAndTheFileIsIdentical() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 16 << 20) { (server) async throws in
            var faults = SampleServerFaults()
            faults.dropAfterBytes = 3 << 20
            faults.dropLimit = 2
            server.setFaults(faults)
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir, segments: 4))
            #expect(throws: Never.self) { try result.get() }
            #expect(facts.contains { $0.retry?.attempt == 1 })
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
            #expect(Double(server.stats.bodyBytesSent) <= 1.3 * Double(20 << 20))
        }
    }

    @Test func aSegmentedRunInterruptedWithHolesResumesOnlyTheMissingBytes() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 16 << 20) { (server) async throws in
            var faults = SampleServerFaults()
            faults.dropAfterBytes = 2 << 20
            faults.dropLimit = 1
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
            // Only what was missing travelled again (plus at most a little overlap at splits).
            #expect(Int64(server.stats.bodyBytesSent) <= (20 << 20) - kept + (1 << 20))
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
            #expect(server.stats.requests == 1)  // the 1 MiB probe was the whole file
        }
    }

    /// A connection faster than `fastConnection` is not what limits the download: the others wait, and
    /// never start while it keeps up (the probe, then one request for the rest). On a manual clock: the probe
    /// takes no time on it, and the one window that passes holds megabytes.
    @Test func aConnectionFastEnoughIsNotSplit() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            let clock = ManualClock()
            var downloader = Downloader(clock: clock)
            downloader.fastConnection = 64 << 10
            downloader.splitWindow = .seconds(1)
            var judged = false
            let (result, facts) = await downloader.runCollectingFacts(
                DownloadJob.sample(server, "medium.bin", dir, segments: 4)
            ) { progress in
                // At least 2 MiB since the probe, in the window of a second that passes now.
                guard !judged, progress.completed >= 3 << 20 else { return }
                judged = true
                clock.advance(by: .seconds(1))
            }
            #expect(throws: Never.self) { try result.get() }
            #expect(judged)
            #expect(facts == [.splitDeferred(bytesPerSecond: .infinity)], "\(facts)")
            #expect(server.stats.requests == 2)
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }

    /// ...and when it slows down (here a window of a second on the manual clock that brings at most the
    /// rest of the file, far below `fastConnection`), the others join and take halves of what is left.
    @Test func theOthersJoinWhenTheConnectionSlowsDown() async throws {
        let dir = TempDirectory()
        // Throttled so that the one connection is still at it when the others are let in.
        try await withSampleServer(rate: 4 << 20) { (server) async throws in
            let clock = ManualClock()
            var downloader = Downloader(clock: clock)
            downloader.fastConnection = 64 << 20
            downloader.splitWindow = .seconds(1)
            var slowed = false
            let (result, facts) = await downloader.runCollectingFacts(
                DownloadJob.sample(server, "medium.bin", dir, segments: 4)
            ) { progress in
                guard !slowed, progress.completed >= 2 << 20 else { return }
                slowed = true
                clock.advance(by: .seconds(1))
            }
            #expect(throws: Never.self) { try result.get() }
            #expect(facts.count == 2 && facts.first == .splitDeferred(bytesPerSecond: .infinity), "\(facts)")
            #expect(facts.contains { if case .split(let rate, 4) = $0 { rate < Double(20 << 20) } else { false } },
                    "\(facts)")
            #expect(server.stats.requests > 2)
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }
}
