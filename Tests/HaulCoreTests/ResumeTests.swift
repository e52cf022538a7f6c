import Foundation
import NIOConcurrencyHelpers
import SampleServer
import TestSupport
import Testing
@testable import HaulCore

/// Resume, retries and refusals against the sample server's faults.
@Suite struct ResumeTests {

    @Test func aDroppedConnectionIsRetriedFromWhereItStopped() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            var faults = SampleServerFaults()
            faults.dropAfterBytes = 5 << 20
            faults.dropLimit = 2
            server.setFaults(faults)
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir))
            #expect(try result.get().path == dir.file("medium.bin"))
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
            let retries = facts.compactMap(\.retry)
            #expect(retries.count == 2 && facts.count == 2, "\(facts)")
            #expect(retries.map(\.attempt) == [1, 2] && retries.allSatisfy { $0.of == 5 && $0.reason.category == .network })
            // About 10 MiB: the server counts what it hands its socket, and a loaded run can see the close
            // before the last of those bytes.
            #expect(retries.last.map { (9 << 20)...(10 << 20) ~= $0.resumeAt } == true, "\(facts)")
            // Resumed, not restarted: the server sent the file about once.
            #expect(server.stats.bodyBytesSent >= 20 << 20 && server.stats.bodyBytesSent < 21 << 20)
            #expect(server.stats.rangeRequests == 2)
            #expect(dir.listing() == ["medium.bin"])
        }
    }

    @Test func unavailableAnswersWaitForRetryAfterThenSucceed() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            var faults = SampleServerFaults()
            faults.unavailableCount = 2
            faults.retryAfterSeconds = 1
            server.setFaults(faults)
            let clock = ManualClock()
            let downloader = Downloader(clock: clock)
            let job = DownloadJob.sample(server, "small.bin", dir)
            let (facts, told) = AsyncStream.makeStream(of: DownloadFact.self)
            let download = Task {
                try await downloader.download(job) { event in
                    if case .fact(let fact) = event { told.yield(fact) }
                }
            }
            var seen = facts.makeAsyncIterator()
            for attempt in 1...2 {
                let fact = await seen.next()
                #expect(fact?.retry?.attempt == attempt && fact?.retry?.reason.httpStatus == 503, "\(String(describing: fact))")
                guard case .retrying(_, _, let delay, _, _)? = fact else { break }
                #expect(delay == 1, "Retry-After: 1")
                // The retry waits on the downloader's clock: nothing is sent until a second has passed on it.
                await clock.waitForSleepers(1)
                clock.advance(by: .milliseconds(999))
                #expect(clock.sleeperCount == 1 && server.stats.requests == attempt)
                clock.advance(by: .milliseconds(1))
            }
            _ = try await download.value
            told.finish()
            let more = await seen.next()
            #expect(more == nil, "no other fact")
            #expect(server.stats.requests == 3)
        }
    }

    @Test func permanentErrorsFailAtOnce() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "missing.bin", dir))
            #expect(throws: HaulError(.server, "server answered 404 Not Found", httpStatus: 404)) { try result.get() }
            #expect(facts.isEmpty)
            #expect(server.stats.requests == 1)
        }
    }

    /// A first run that fails at (about) 5 MiB with no retries, leaving NAME.part and its state; returns
    /// the bytes the state records. (The server closes after handing 5 MiB to its socket; a slow run can
    /// see the close before the last of them.)
    /// The last progress of a body that stops (a drop here; a pause or a stop end it the same way) counts every
    /// byte written and checkpointed: the service's record of a paused download said 1310720 where the part
    /// held 1359872, the offset its resume then asked for. Eight drops: whether the connection's end comes as
    /// an error or as an early end of the stream is libcurl's timing, and only the first lost the count.
    @Test func theLastProgressCountsEveryByteWritten() async throws {
        try await withSampleServer { (server) async throws in
            for round in 0..<8 {
                let dir = TempDirectory()
                var faults = SampleServerFaults()
                // Not on a report's boundary: reports come every 200 KiB (1/100 of the file) or 100 ms.
                faults.dropAfterBytes = (3 << 20) + 12_345 + round * 4_099
                faults.dropLimit = 1
                server.setFaults(faults)
                let last = NIOLockedValueBox<Int64>(-1)
                let (result, _) = await Downloader.quickRetries.runCollectingFacts(
                    DownloadJob.sample(server, "medium.bin", dir, retries: 0)) { progress in
                    last.withLockedValue { $0 = progress.completed }
                }
                #expect(result.failure?.category == .network)
                let state = try JSONDecoder().decode(
                    ResumeState.self, from: Data(contentsOf: URL(fileURLWithPath: dir.file("medium.bin.part.json"))))
                #expect(state.completedBytes > 3 << 20)
                #expect(last.withLockedValue { $0 } == state.completedBytes, "round \(round): \(state.completed)")
            }
        }
    }

    @discardableResult
    func interruptedRun(_ server: SampleServer, _ dir: TempDirectory) async throws -> Int64 {
        var faults = SampleServerFaults()
        faults.dropAfterBytes = 5 << 20
        faults.dropLimit = 1
        server.setFaults(faults)
        let (result, _) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir, retries: 0))
        let error = try #require(result.failure)
        #expect(error.category == .network)
        let state = try JSONDecoder().decode(
            ResumeState.self, from: Data(contentsOf: URL(fileURLWithPath: dir.file("medium.bin.part.json"))))
        #expect(state.url == server.downloadURL("medium.bin"))
        #expect(state.completed.count == 1)
        // Everything written before the drop is checkpointed, not only what the last progress report counted.
        #expect(state.contiguousPrefix == 5 << 20)
        #expect(state.total == 20 << 20)
        #expect(state.etag != nil)
        server.setFaults(SampleServerFaults())
        server.resetStats()
        return state.contiguousPrefix
    }

    /// A run that starts over (here `--no-resume`) and ends before its own journal starts leaves no journal
    /// of the run before.
    @Test func startingOverDropsTheEarlierJournal() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            var recording = Downloader.quickRetries
            recording.recordAfter = .zero
            var faults = SampleServerFaults()
            faults.dropAfterBytes = 5 << 20
            faults.dropLimit = 1
            server.setFaults(faults)
            _ = await recording.runCollectingFacts(DownloadJob.sample(server, "medium.bin", dir, retries: 0))
            #expect(dir.listing() == ["medium.bin.part", "medium.bin.part.journal", "medium.bin.part.json"])
            server.setFaults(SampleServerFaults())
            var quiet = Downloader.quickRetries
            quiet.recordAfter = .seconds(3600)
            var job = DownloadJob.sample(server, "medium.bin", dir)
            job.resume = false
            let (result, facts) = await quiet.runCollectingFacts(job)
            #expect(try result.get().bytes == 20 << 20)
            #expect(facts == [.resumeRefused(part: "medium.bin.part", reason: .notWanted)])
            #expect(dir.listing() == ["medium.bin"])
        }
    }

    @Test func theNextRunResumesWithRangeAndIfRange() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            let kept = try await interruptedRun(server, dir)
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir))
            #expect(try result.get().bytes == (20 << 20) - kept)
            #expect(facts.isEmpty)
            #expect(Int64(server.stats.bodyBytesSent) == (20 << 20) - kept)
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
            #expect(dir.listing() == ["medium.bin"])
        }
    }

    @Test func aServerIgnoringRangeMeansStartingOverWithANotice() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            try await interruptedRun(server, dir)
            var faults = SampleServerFaults()
            faults.ignoreRange = true
            server.setFaults(faults)
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir))
            #expect(try result.get().bytes == 20 << 20)
            #expect(facts == [.resumeRefused(part: "medium.bin.part", reason: .rangeIgnored(status: 200))])
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }

    @Test func aChangedETagMeansStartingOverWithANotice() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            try await interruptedRun(server, dir)
            var faults = SampleServerFaults()
            faults.etagSalt = "v2"
            server.setFaults(faults)
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir))
            #expect(try result.get().bytes == 20 << 20)
            #expect(facts == [.resumeRefused(part: "medium.bin.part", reason: .validatorsChanged)])
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }

    /// Starting over drops the old version's state and journal before a byte of the new body is written: a
    /// kill before the first checkpoint left them over the new bytes, which a later resume took as the old
    /// version's (a server rolled back to it answers the old validators).
    @Test func startingOverDropsTheOldStateBeforeTheNewBytes() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            try await interruptedRun(server, dir)
            guard case .found(let old) = ResumeState.load(from: dir.file("medium.bin.part.json")) else {
                Issue.record("no state after the interrupted run")
                return
            }
            var faults = SampleServerFaults()
            faults.etagSalt = "v2"
            faults.stallSeconds = 60
            faults.stallAfterBytes = 1 << 20
            server.setFaults(faults)
            let manager = DownloadManager(concurrency: 1)
            let id = await manager.add(DownloadJob(url: server.downloadURL("medium.bin"), outputDirectory: dir.path))
            // Restarted, and bytes of the new version written (the body stalls after its first megabyte,
            // long before a checkpoint would write the new state).
            try await within(30, "the restart's first bytes") {
                var restarted = false
                for await event in manager.events {
                    if case .fact(id, .resumeRefused(_, .validatorsChanged)) = event { restarted = true }
                    if restarted, case .progress(id, let progress) = event, progress.completed > 0 { return }
                }
            }
            switch ResumeState.load(from: dir.file("medium.bin.part.json")) {
            case .found(let state):
                #expect(state.etag != old.etag, "the old version's state is still over the new bytes")
            default:
                #expect(!FileManager.default.fileExists(atPath: dir.file("medium.bin.part.journal")),
                        "a journal with no state")
            }
            await manager.cancel(id)
            await manager.waitUntilIdle()
        }
    }

    /// A part with holes past its first (a crash of -s N, a block `haul verify` found bad) resumed over one
    /// connection fetches the holes only, not everything after the first one (which took 19.2 MiB where
    /// 12.4 were missing).
    @Test func oneConnectionFetchesOnlyTheHoles() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            let url = server.downloadURL("medium.bin")
            let transfer = CurlDriver.shared.start(HTTPRequest(url: url, method: .head))
            let head = try await transfer.head()
            var bytes = expectedBytes("medium.bin")
            let mib = 1 << 20
            let holes = [ByteRange(Int64(2 * mib), Int64(3 * mib)), ByteRange(Int64(10 * mib), Int64(12 * mib))]
            // One memset a hole: element by element, a debug build under the sanitizer took seconds.
            bytes.withUnsafeMutableBytes { raw in
                for hole in holes { _ = memset(raw.baseAddress! + Int(hole.start), 0, Int(hole.count)) }
            }
            _ = FileManager.default.createFile(atPath: dir.file("medium.bin.part"), contents: Data(bytes))
            try ResumeState(url: url, etag: head["ETag"], lastModified: head["Last-Modified"], total: 20 << 20,
                            completed: [ByteRange(0, Int64(2 * mib)), ByteRange(Int64(3 * mib), Int64(10 * mib)),
                                        ByteRange(Int64(12 * mib), 20 << 20)])
                .save(to: dir.file("medium.bin.part.json"))
            server.resetStats()
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir))
            #expect(throws: Never.self) { try result.get() }
            #expect(facts.isEmpty, "\(facts)")
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
            #expect(server.stats.bodyBytesSent == Int64(3 * mib), "sent \(server.stats.bodyBytesSent)")
        }
    }

    /// A name taken while its part waited (a file made at `NAME` between the runs): the part is still
    /// resumed, and the finished file takes the next free name. (It was passed over: the next run fetched
    /// the whole file into `NAME.1` and left the part for ever.)
    @Test func aPartWhoseNameWasTakenIsStillResumed() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            let kept = try await interruptedRun(server, dir)
            _ = FileManager.default.createFile(atPath: dir.file("medium.bin"), contents: Data("mine".utf8))
            let (result, _) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir))
            #expect(try result.get().path == dir.file("medium.1.bin"))
            #expect(try FileDigest.hex(of: dir.file("medium.1.bin")) == expectedSHA256("medium.bin"))
            #expect(server.stats.bodyBytesSent == 20 << 20 - kept, "sent \(server.stats.bodyBytesSent)")
            #expect(try String(contentsOfFile: dir.file("medium.bin"), encoding: .utf8) == "mine")
            #expect(dir.listing() == ["medium.1.bin", "medium.bin"])
        }
    }

    /// `--overwrite` over a directory fails before a byte is fetched, leaving nothing (it failed at the rename,
    /// after the whole download, with a part the next run could not resume).
    @Test func overwritingADirectoryFailsAtOnce() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            try FileManager.default.createDirectory(atPath: dir.file("medium.bin"), withIntermediateDirectories: false)
            var job = DownloadJob.sample(server, "medium.bin", dir)
            job.existingFile = .overwrite
            let (result, _) = await runQuickly(job)
            let error = try #require(result.failure)
            #expect(error.category == .fileIO && error.message.contains("is a directory"), "\(error)")
            #expect(server.stats.bodyBytesSent == 0)
            #expect(dir.listing() == ["medium.bin"])
        }
    }

    /// A part replaced during the download (removed, and another file made at its name): the download fails,
    /// and its state and journal go with it, so that no later run takes the new file for this download's
    /// bytes (they stayed, describing a part that was no longer there).
    @Test func aReplacedPartTakesItsStateAlong() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 4 << 20) { (server) async throws in
            let manager = DownloadManager(concurrency: 1)
            let id = await manager.add(DownloadJob(url: server.downloadURL("medium.bin"), outputDirectory: dir.path))
            // Past its first checkpoint: the state file is there.
            try await within(30, "the first checkpoint") {
                for await event in manager.events {
                    if case .progress(id, _) = event, FileManager.default.fileExists(atPath: dir.file("medium.bin.part.json")) {
                        return
                    }
                }
            }
            try FileManager.default.removeItem(atPath: dir.file("medium.bin.part"))
            _ = FileManager.default.createFile(atPath: dir.file("medium.bin.part"), contents: Data(repeating: 9, count: 100))
            server.setRate(nil)
            await manager.waitUntilIdle()
            guard case .failed(let error) = await manager.state(of: id) else {
                Issue.record("not failed: \(String(describing: await manager.state(of: id)))")
                return
            }
            #expect(error.message.contains("was replaced by something else"), "\(error)")
            #expect(dir.listing() == ["medium.bin.part"], "\(dir.listing())")
        }
    }

    /// Another URL's partial download may still be resumed: it is left alone, and this one takes the next name.
    @Test func anotherURLsPartIsLeftForIt() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            let foreign = "{\"version\":1,\"url\":\"http://elsewhere/x\",\"completed\":[{\"start\":0,\"end\":10}]}"
            _ = FileManager.default.createFile(atPath: dir.file("medium.bin.part"), contents: Data(repeating: 0xEE, count: 4096))
            _ = FileManager.default.createFile(atPath: dir.file("medium.bin.part.json"), contents: Data(foreign.utf8))
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir))
            #expect(try result.get().path == dir.file("medium.1.bin"))
            #expect(facts == [.partLeftAlone(part: "medium.bin.part", reason: .otherURL(url: "http://elsewhere/x"))])
            #expect(try FileDigest.hex(of: dir.file("medium.1.bin")) == expectedSHA256("medium.bin"))
            #expect(dir.listing() == ["medium.1.bin", "medium.bin.part", "medium.bin.part.json"])
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("medium.bin.part.json"))) == Data(foreign.utf8))
        }
    }

    @Test(arguments: [
        "{not json",
        "{\"version\":99,\"url\":\"u\",\"completed\":[]}",
        // Incoherent (edited by hand): a negative size, a range past the size, an empty or negative range.
        "{\"version\":1,\"url\":\"u\",\"total\":-1,\"completed\":[]}",
        "{\"version\":1,\"url\":\"u\",\"total\":10,\"completed\":[{\"start\":0,\"end\":20}]}",
        "{\"version\":1,\"url\":\"u\",\"completed\":[{\"start\":-5,\"end\":20}]}",
    ])
    func foreignOrCorruptStateIsRefused(state: String) async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            _ = FileManager.default.createFile(atPath: dir.file("medium.bin.part"), contents: Data(repeating: 0xEE, count: 4096))
            _ = FileManager.default.createFile(atPath: dir.file("medium.bin.part.json"), contents: Data(state.utf8))
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir))
            #expect(throws: Never.self) { try result.get() }
            #expect(facts == [.resumeRefused(part: "medium.bin.part", reason: .unreadableState)])
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
            #expect(dir.listing() == ["medium.bin"])
        }
    }

    @Test func stateClaimingMoreThanThePartHoldsIsRefused() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            let url = server.downloadURL("medium.bin")
            _ = FileManager.default.createFile(atPath: dir.file("medium.bin.part"), contents: Data(count: 100))
            try ResumeState(url: url, etag: nil, lastModified: nil, total: 20 << 20,
                            completed: [ByteRange(0, 1 << 20)]).save(to: dir.file("medium.bin.part.json"))
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir))
            #expect(throws: Never.self) { try result.get() }
            #expect(facts == [.resumeRefused(part: "medium.bin.part", reason: .shorterThanState)])
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }

    /// The stall timeout runs on the downloader's clock: a second of silence on it ends the transfer.
    @Test func aStallTripsTheTimeout() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            var faults = SampleServerFaults()
            faults.stallSeconds = 30
            // One progress batch of small.bin (64 KiB): when it is told, every byte before the stall has come.
            faults.stallAfterBytes = 64 << 10
            server.setFaults(faults)
            var stalling = DownloadJob.sample(server, "small.bin", dir, retries: 0)
            stalling.transfer.stallTimeout = 1
            let clock = ManualClock()
            let (result, _) = await Downloader(clock: clock).runCollectingFacts(stalling) { progress in
                #expect(progress.completed == 64 << 10)
                clock.advance(by: .seconds(2))
            }
            let error = try #require(result.failure)
            #expect(error.category == .network)
            #expect(error.message == "no data received for 1 s (stalled)")
        }
    }

    @Test func checkpointsRecordOnlySyncedProgressWhileRunning() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            // Each batch moves the clock one checkpoint interval on (less than the accumulator's 100 ms
            // window, so batches keep their size): every batch checkpoints.
            let clock = ManualClock()
            var eager = Downloader(clock: clock)
            eager.firstCheckpoint = .milliseconds(50)
            eager.checkpointInterval = .milliseconds(50)
            let job = DownloadJob.sample(server, "medium.bin", dir)
            var batches = 0
            var states: [ResumeState] = []
            _ = try await eager.download(job) { event in
                guard case .progress = event else { return }
                batches += 1
                if case .found(let state) = ResumeState.load(from: dir.file("medium.bin.part.json")) {
                    states.append(state)
                }
                clock.advance(by: .milliseconds(50))
            }
            // Every batch but the first finds the checkpoint of the one before.
            #expect(batches > 3 && states.count == batches - 1, "\(batches) batches, \(states.count) states")
            // Each checkpoint covers a prefix that only grows.
            let prefixes = states.map(\.contiguousPrefix)
            #expect(prefixes == prefixes.sorted())
            #expect(states.allSatisfy { $0.completed.count == 1 })
            #expect(!FileManager.default.fileExists(atPath: dir.file("medium.bin.part.json")))
        }
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
