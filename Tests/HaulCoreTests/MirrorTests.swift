import Foundation
import SampleServer
import TestSupport
import Testing
@testable import HaulCore

/// One file from several sources: how connections spread over them (`SourceSpread`), how a source's bytes are
/// checked against the others' (`SourceLedger`), and downloads from several in-process sample servers.
@Suite struct MirrorTests {
    // MARK: the spread, without network

    @Test func connectionsGoRoundRobinInTheJobsOrder() {
        var spread = SourceSpread(urls: ["http://a/f", "http://b/f", "http://c/f"], perServer: 4)
        let assigned = spread.assign(workers: 4)
        #expect(assigned == [0, 1, 2, 0])
        #expect(spread.sources.map(\.connections) == [2, 1, 1])
        #expect(spread.sources.allSatisfy { $0.state == .active })
    }

    @Test func fewerConnectionsThanSourcesUseTheFirstOnes() {
        var spread = SourceSpread(urls: ["http://a/f", "http://b/f", "http://c/f"], perServer: 4)
        let assigned = spread.assign(workers: 1)
        #expect(assigned == [0])
        #expect(spread.sources.map(\.state) == [.active, .waiting, .waiting])
    }

    @Test func oneHostTakesAtMostItsCapAcrossSourcesAndPorts() {
        // Three URLs on one host share its cap, whatever their ports; another host has a cap of its own.
        var spread = SourceSpread(urls: ["http://u:p@A:80/x", "http://a:81/y", "http://b/z", "http://a/w"], perServer: 2)
        #expect(SourceSpread.server(of: "http://u:p@A:80/x?q") == "a")
        #expect(SourceSpread.server(of: "http://[::1]:8080/x") == "[::1]")
        #expect(SourceSpread.server(of: "http://[::1]/x") == "[::1]")
        let assigned = spread.assign(workers: 6)
        #expect(assigned == [0, 1, 2, 2, nil, nil])
    }

    @Test func aFailedSourcesConnectionsMoveToTheLeastBusyWorkingOne() {
        var spread = SourceSpread(urls: ["http://a/f", "http://b/f", "http://c/f"], perServer: 2)
        let assigned = spread.assign(workers: 2)
        #expect(assigned == [0, 1])
        let failed = spread.fail(0, reason: HaulError(.server, "refused", httpStatus: 503))
        let again = spread.fail(0, reason: HaulError(.server, "again", httpStatus: 503))
        #expect(failed && !again, "the second is not news")
        spread.release(0)
        let taken = (0..<4).map { _ in spread.take() }
        // The source standing by first, then the least busy, until both working servers are at their cap.
        #expect(taken == [2, 1, 2, nil])
    }

    @Test func aRetryAsksTheFailedSourcesAgainNotTheDroppedOnes() {
        var spread = SourceSpread(urls: ["http://a/f", "http://b/f", "http://c/f"], perServer: 4)
        _ = spread.assign(workers: 3)
        _ = spread.fail(0, reason: HaulError(.network, "connection refused"))
        _ = spread.drop(1, reason: .otherSize(size: 1000, expected: 2000))
        #expect(spread.anyUsable)
        spread.retry()
        #expect(spread.sources.map(\.state) == [.waiting, .dropped, .idle])
        #expect(spread.firstUsable(from: 1) == 2)
        let statuses = spread.statuses(rates: [])
        #expect(statuses[1].reason == "serves another file: size 1000 not 2000")
    }

    @Test func statusesMaskPasswords() {
        let spread = SourceSpread(urls: ["http://u:secret@a/f", "http://b/f"], perServer: 4)
        #expect(spread.statuses(rates: []).map(\.url) == ["http://u:***@a/f", "http://b/f"])
    }

    @Test func sourcesAreReportedOnAChangeAndAtMostOnceASecondWhileBytesCome() {
        let pool = SourcePool(urls: ["http://a/f", "http://b/f"], perServer: 4)
        _ = pool.assign(workers: 2)
        #expect(pool.report(at: 0) != nil, "a change")
        pool.add(bytes: 1000, from: 0)
        #expect(pool.report(at: 0.5) == nil, "bytes, but within the second")
        pool.add(bytes: 1000, from: 0)
        let due = pool.report(at: 1.0)
        #expect(due?.map(\.bytes) == [2000, 0])
        #expect(due?.first.map { $0.bytesPerSecond > 0 } == true)
        _ = pool.fail(1, HaulError(.network, "connection refused"))
        #expect(pool.report(at: 1.1)?.map(\.state) == [.active, .failed], "a change is reported at once")
    }

    @Test func theNewFactsAreOneLineEach() {
        let dropped = DownloadFact.sourceDropped(url: "http://b/f", reason: .otherBytes(offset: 1_048_576))
        #expect(dropped.sentence == "http://b/f sent other bytes than the other sources at 1048576; dropped")
        #expect(dropped.kind == "source-dropped")
        let failed = DownloadFact.sourceFailed(url: "http://c/f", reason: HaulError(.network, "connection refused"))
        #expect(failed.sentence == "http://c/f failed (connection refused); its part goes to the other sources")
        #expect(failed.kind == "source-failed")
        #expect(JSONReporter.json(dropped).contains("\"otherBytes\""), "\(JSONReporter.json(dropped))")
    }

    // MARK: the ledger, without network

    @Test func aCheckWaitsForTrustedBytesThenDropsTheSourceThatDiffers() {
        var ledger = SourceLedger(sources: 3)
        let disk: [UInt8] = Array(0..<200).map { UInt8($0) }
        let read: (ByteRange) -> [UInt8]? = { Array(disk[Int($0.start)..<Int($0.end)]) }
        // Source 1's overlap [100, 110) is written by source 2, which waits for its own check: nothing yet.
        let kept = [ledger.fetched(ByteRange(0, 100), from: 0), ledger.fetched(ByteRange(100, 150), from: 2)]
        #expect(kept == [true, true])
        ledger.expect(.init(source: 1, range: ByteRange(100, 110), bytes: Array(read(ByteRange(100, 110))!)))
        var wrong = read(ByteRange(90, 100))!
        wrong[3] ^= 0xff
        ledger.expect(.init(source: 2, range: ByteRange(90, 100), bytes: wrong))
        let early = ledger.settle(completed: [ByteRange(0, 80)], read: read)
        #expect(early.isEmpty, "bytes not on disk yet")
        let drops = ledger.settle(completed: [ByteRange(0, 150)], read: read)
        // Source 2 is compared with source 0's (trusted) bytes and dropped; source 1's check waits until the
        // caller has taken source 2's bytes out of what is on disk.
        #expect(drops.map(\.source) == [2])
        #expect(drops.first?.offset == 93)
        #expect(drops.first?.ranges == [ByteRange(100, 150)])
        let late = ledger.fetched(ByteRange(150, 160), from: 2)
        #expect(!late, "a dropped source's bytes are not kept")
        #expect(ledger.checks.map(\.source) == [1])
        let after = ledger.settle(completed: [ByteRange(0, 100)], read: read)
        #expect(after.isEmpty, "its bytes are missing again")
    }

    @Test func aSourceIsNeverCheckedAgainstItsOwnBytes() {
        var ledger = SourceLedger(sources: 2)
        let disk = [UInt8](repeating: 7, count: 64)
        // Source 1's connection took the range before its own (work stealing): its overlap there proves nothing.
        _ = ledger.fetched(ByteRange(0, 32), from: 0)
        _ = ledger.fetched(ByteRange(32, 64), from: 1)
        ledger.expect(.init(source: 1, range: ByteRange(32, 64), bytes: [UInt8](repeating: 7, count: 32)))
        let drops = ledger.settle(completed: [ByteRange(0, 64)], force: true) { Array(disk[Int($0.start)..<Int($0.end)]) }
        #expect(drops.isEmpty)
        #expect(ledger.checks.count == 1, "still open")
    }

    @Test func matchingOverlapBytesKeepTheSource() {
        var ledger = SourceLedger(sources: 2)
        let disk = [UInt8](repeating: 7, count: 64)
        _ = ledger.fetched(ByteRange(0, 64), from: 0)
        ledger.expect(.init(source: 1, range: ByteRange(32, 64), bytes: [UInt8](repeating: 7, count: 32)))
        let drops = ledger.settle(completed: [ByteRange(0, 64)]) { Array(disk[Int($0.start)..<Int($0.end)]) }
        #expect(drops.isEmpty)
        #expect(ledger.checks.isEmpty)
    }

    @Test func theSegmentPlanTakesRangesBackFromADroppedSource() async {
        let plan = SegmentPlan(missing: [ByteRange(0, 8 << 20)], parts: 2)
        let a = plan.claim(for: 0)
        let b = plan.claim(for: 1)
        #expect(a == ByteRange(0, 4 << 20) && b == ByteRange(4 << 20, 8 << 20))
        _ = plan.advance(1, to: 5 << 20)
        plan.cut([1])
        #expect(plan.end(of: 1) == 5 << 20)
        plan.handBack(1, writtenUpTo: 5 << 20)
        #expect(plan.claim(for: 1) == ByteRange(5 << 20, 8 << 20), "the cut rest, claimable again")
        plan.reopen([ByteRange(4 << 20, 5 << 20)])
        #expect(plan.claim(for: 0) == ByteRange(4 << 20, 5 << 20))
    }

    // MARK: downloads from in-process servers

    /// medium.bin from `servers` (the first is the job's URL), into `dir`.
    private func job(_ servers: [SampleServer], _ dir: TempDirectory, segments: Int, retries: Int = 0,
                     names: [String]? = nil) -> DownloadJob {
        let urls = servers.indices.map { servers[$0].downloadURL(names?[$0] ?? "medium.bin") }
        var job = DownloadJob(sources: urls.map { DownloadSource(url: $0) }, outputDirectory: dir.path,
                              outputName: "medium.bin")
        job.segments = segments
        job.retries = retries
        return job
    }

    /// Runs `job`: its outcome, facts and the last source statuses reported.
    private func run(_ job: DownloadJob) async -> (Result<DownloadResult, HaulError>, [DownloadFact], [SourceStatus]) {
        var facts: [DownloadFact] = []
        var statuses: [SourceStatus] = []
        do {
            let result = try await Downloader.quickRetries.download(job) { event in
                switch event {
                case .fact(let fact): facts.append(fact)
                case .sources(let now): statuses = now
                case .progress, .started: break
                }
            }
            return (.success(result), facts, statuses)
        } catch {
            return (.failure(error), facts, statuses)
        }
    }

    private func withServers<T>(_ count: Int, files: [GeneratedFile] = GeneratedFile.standardSet,
                                _ body: ([SampleServer]) async throws -> T) async throws -> T {
        var servers: [SampleServer] = []
        do {
            for _ in 0..<count {
                servers.append(try await SampleServer.start(SampleServerConfiguration(port: 0, rate: 8 << 20,
                                                                                       files: files, jpegs: false)))
            }
            let result = try await body(servers)
            for server in servers { await server.stop() }
            return result
        } catch {
            for server in servers { await server.stop() }
            throw error
        }
    }

    /// A download with one source reports nothing of sources: the engine of several never runs for it.
    @Test func aSingleSourceDownloadReportsNoSources() async throws {
        let dir = TempDirectory()
        try await withServers(1) { (servers) async throws in
            var reported = 0
            let result = try await Downloader.quickRetries.download(job(servers, dir, segments: 4)) { event in
                if case .sources = event { reported += 1 }
            }
            #expect(result.bytes == 20 << 20)
            #expect(reported == 0)
        }
    }

    @Test func segmentsSpreadOverTheSourcesAndTheFileIsIdentical() async throws {
        let dir = TempDirectory()
        try await withServers(3) { (servers) async throws in
            let (result, facts, statuses) = await run(job(servers, dir, segments: 3))
            #expect(throws: Never.self) { try result.get() }
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
            for server in servers { #expect(server.stats.rangeRequests >= 1) }
            #expect(statuses.count == 3 && statuses.allSatisfy { $0.bytes > 0 && $0.state != .failed }, "\(statuses)")
            #expect(statuses.reduce(0) { $0 + $1.bytes } == 20 << 20)
            #expect(!facts.contains { $0.kind == "source-failed" || $0.kind == "source-dropped" }, "\(facts)")
        }
    }

    @Test func aSourceThatRefusesLosesItsWorkToTheOthers() async throws {
        let dir = TempDirectory()
        try await withServers(3) { (servers) async throws in
            var refusing = SampleServerFaults()
            refusing.unavailableCount = 1000
            servers[1].setFaults(refusing)
            let (result, facts, statuses) = await run(job(servers, dir, segments: 3))
            #expect(throws: Never.self) { try result.get() }
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
            #expect(facts.contains { if case .sourceFailed(let url, let reason) = $0 {
                url == servers[1].downloadURL("medium.bin") && reason.httpStatus == 503 } else { false } }, "\(facts)")
            try #require(statuses.count == servers.count, "\(statuses)")
            #expect(statuses[1].state == .failed && statuses[1].bytes == 0, "\(statuses)")
            #expect(!facts.contains { $0.retry != nil }, "no retry: the others made it good")
        }
    }

    @Test func aSourceOfAnotherSizeIsDroppedAndNeverAskedAgain() async throws {
        let dir = TempDirectory()
        let files = GeneratedFile.standardSet + [GeneratedFile(name: "shorter.bin", size: 19 << 20)]
        try await withServers(2, files: files) { (servers) async throws in
            let (result, facts, statuses) = await run(job(servers, dir, segments: 4, retries: 2,
                                                          names: ["medium.bin", "shorter.bin"]))
            #expect(throws: Never.self) { try result.get() }
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
            let dropped = facts.filter { $0.kind == "source-dropped" }
            #expect(dropped == [.sourceDropped(url: servers[1].downloadURL("shorter.bin"),
                                               reason: .otherSize(size: 19 << 20, expected: 20 << 20))])
            #expect(dropped.first?.sentence.contains("serves another file: size 19922944 not 20971520") == true)
            try #require(statuses.count == servers.count, "\(statuses)")
            #expect(statuses[1].state == .dropped && statuses[1].bytes == 0, "\(statuses)")
        }
    }

    @Test func aSourceOfOtherBytesIsDroppedAndNothingItSentIsKept() async throws {
        let dir = TempDirectory()
        let files = GeneratedFile.standardSet + [GeneratedFile(name: "twin.bin", size: 20 << 20)]
        try await withServers(2, files: files) { (servers) async throws in
            let (result, facts, statuses) = await run(job(servers, dir, segments: 2, names: ["medium.bin", "twin.bin"]))
            #expect(throws: Never.self) { try result.get() }
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
            #expect(facts.contains { if case .sourceDropped(_, .otherBytes) = $0 { true } else { false } }, "\(facts)")
            try #require(statuses.count == servers.count, "\(statuses)")
            #expect(statuses[1].state == .dropped, "\(statuses)")
        }
    }

    @Test func everySourceFailingFailsTheDownloadWithTheFirstSourcesError() async throws {
        let dir = TempDirectory()
        try await withServers(2) { (servers) async throws in
            var refusing = SampleServerFaults()
            refusing.unavailableCount = 1000
            servers[0].setFaults(refusing)
            servers[1].setFaults(refusing)
            let (result, facts, statuses) = await run(job(servers, dir, segments: 2))
            #expect(throws: HaulError.self) { try result.get() }
            if case .failure(let error) = result { #expect(error.httpStatus == 503 && error.category == .server) }
            #expect(facts.filter { $0.kind == "source-failed" }.count == 2, "\(facts)")
            #expect(statuses.allSatisfy { $0.state == .failed }, "\(statuses)")
        }
    }

    /// Over one connection: the first source drops its connection 3 MiB in, and the second goes on from the
    /// bytes on disk (a range from where the part ends), with no retry spent.
    @Test func overOneConnectionTheNextSourceContinuesFromTheBytesOnDisk() async throws {
        let dir = TempDirectory()
        try await withServers(2) { (servers) async throws in
            var cut = SampleServerFaults()
            cut.dropAfterBytes = 3 << 20
            servers[0].setFaults(cut)
            let (result, facts, statuses) = await run(job(servers, dir, segments: 1))
            #expect(throws: Never.self) { try result.get() }
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
            #expect(facts.contains { $0.kind == "source-failed" }, "\(facts)")
            #expect(!facts.contains { $0.retry != nil || $0.kind == "resume-refused" }, "\(facts)")
            // The second source was asked for the 64 KiB before the cut (the check), then for the rest.
            let asked = servers[1].stats.bodies
            #expect(!asked.isEmpty && asked.allSatisfy { $0.lowerBound >= 2 << 20 }, "\(asked)")
            try #require(statuses.count == servers.count, "\(statuses)")
            #expect(statuses[0].state == .failed && statuses[1].bytes > 0, "\(statuses)")
        }
    }
}
