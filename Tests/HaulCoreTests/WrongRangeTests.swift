import Foundation
import NIOConcurrencyHelpers
import SampleServer
import TestSupport
import Testing
@testable import HaulCore

/// A hostile server: answers are checked against the request that was sent, and a wrong one never ends
/// as a file named done.
@Suite struct WrongRangeTests {
    /// A first run that fails after about 5 MiB of medium.bin, leaving NAME.part and its state.
    func interrupted(_ server: SampleServer, _ dir: TempDirectory, faults base: SampleServerFaults = .init())
        async throws -> ResumeState
    {
        var faults = base
        faults.dropAfterBytes = 5 << 20
        faults.dropLimit = 1
        server.setFaults(faults)
        let (result, _) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir, retries: 0))
        #expect(result.failure?.category == .network)
        guard case .found(let state) = ResumeState.load(from: dir.file("medium.bin.part.json")) else {
            struct NoState: Error {}
            throw NoState()
        }
        server.setFaults(SampleServerFaults())
        server.resetStats()
        return state
    }

    @Test(arguments: [SampleServerFaults.RangeFault.fromStart, .wrongTotal, .shifted(4096)])
    func aResumeAnsweredWithAnotherRangeIsAProtocolError(fault: SampleServerFaults.RangeFault) async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            let before = try await interrupted(server, dir)
            var faults = SampleServerFaults()
            faults.wrongRange = fault
            server.setFaults(faults)
            let (result, _) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir))
            let error = try #require(result.failure)
            #expect(error.category == .protocol, "\(error)")
            // The resume asks from what the state made durable, or further: the journal keeps the bytes written
            // after the last checkpoint (up to the drop at 5 MiB).
            let asked = error.message.firstMatch(of: /to a request for bytes (\d+)-/).flatMap { Int64($0.1) }
            #expect(asked.map { $0 >= before.contiguousPrefix && $0 <= 5 << 20 } == true
                    || error.message.contains("not \(20 << 20) as before"), "\(error.message)")
            // Nothing named done, and what was good stays resumable.
            #expect(dir.listing() == ["medium.bin.part", "medium.bin.part.journal", "medium.bin.part.json"])
            guard case .found(let after) = ResumeState.load(from: dir.file("medium.bin.part.json")) else {
                Issue.record("the state file is gone")
                return
            }
            #expect(after == before)
            server.setFaults(SampleServerFaults())
            let (again, _) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir))
            #expect(throws: Never.self) { try again.get() }
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }

    @Test(arguments: [SampleServerFaults.RangeFault.shifted(1), .shifted(-4096), .wrongTotal])
    func segmentsAnsweredWithOtherRangesAreAProtocolError(fault: SampleServerFaults.RangeFault) async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 8 << 20) { (server) async throws in
            var faults = SampleServerFaults()
            faults.wrongRange = fault
            server.setFaults(faults)
            let (result, _) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir, segments: 4))
            let error = try #require(result.failure)
            #expect(error.category == .protocol, "\(error)")
            #expect(!dir.listing().contains("medium.bin"))
        }
    }

    @Test func aCompletePartAnswered416IsFinishedWithoutDownloadingAgain() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            let url = server.downloadURL("medium.bin")
            _ = FileManager.default.createFile(atPath: dir.file("medium.bin.part"), contents: Data(expectedBytes("medium.bin")))
            // The validator the server gives (from a HEAD), as a run that fsynced its last byte would have kept.
            let transfer = CurlDriver.shared.start(HTTPRequest(url: url, method: .head))
            let head = try await transfer.head()
            try ResumeState(url: url, etag: head["ETag"], lastModified: head["Last-Modified"], total: 20 << 20,
                            completed: [ByteRange(0, 20 << 20)]).save(to: dir.file("medium.bin.part.json"))
            server.resetStats()
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir))
            #expect(try result.get().path == dir.file("medium.bin"))
            #expect(facts.isEmpty, "\(facts)")
            #expect(server.stats.bodyBytesSent == 0)
            #expect(dir.listing() == ["medium.bin"])
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }

    @Test func aResumeWithoutValidatorsStartsOverAndSaysWhy() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            var faults = SampleServerFaults()
            faults.omitValidators = true
            let state = try await interrupted(server, dir, faults: faults)
            #expect(state.validator == nil)
            server.setFaults(faults)
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir))
            #expect(throws: Never.self) { try result.get() }
            #expect(facts == [.resumeRefused(part: "medium.bin.part", reason: .noValidators)])
            #expect(server.stats.rangeRequests == 0)
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }

    @Test func bytesPastTheAnnouncedEndAreNeverWritten() async throws {
        let dir = TempDirectory()
        let part = try PartFile(path: dir.file("x.part"), truncate: true)
        let batches = [[UInt8](repeating: 1, count: 600), [UInt8](repeating: 2, count: 600)]
        let stream = AsyncStream<[UInt8]> { continuation in
            for batch in batches { continuation.yield(batch) }
            continuation.finish()
        }
        var caught: HaulError?
        do {
            for try await _ in ByteAccumulator(stream, writingTo: part, startingAt: 100, end: 1000, total: 1000,
                                               clock: ContinuousClock()) {}
        } catch {
            caught = error as? HaulError
        }
        #expect(caught?.category == .protocol)
        #expect(caught?.message == "the server sent more than the 900 bytes it announced")
        #expect(try part.size() == 700)
    }
}

/// The pure check of an answer against its request.
@Suite struct ResponseCheckTests {
    func head(_ status: Int, _ headers: [(String, String)]) -> ResponseHead {
        ResponseHead(status: status, headers: headers.map { (name: $0.0, value: $0.1) }, effectiveURL: "http://h/f")
    }

    @Test func theRangeAskedForIsPlaced() throws {
        #expect(try ResponseCheck.placement(
            of: head(206, [("Content-Range", "bytes 100-199/1000"), ("Content-Length", "100")]),
            asked: (100, 199), knownTotal: nil) == .range(first: 100, last: 199, total: 1000))
        #expect(try ResponseCheck.placement(
            of: head(206, [("Content-Range", "bytes 100-999/1000")]), asked: (100, nil), knownTotal: 1000)
            == .range(first: 100, last: 999, total: 1000))
        // A probe for more than the file holds gets the file.
        #expect(try ResponseCheck.placement(
            of: head(206, [("Content-Range", "bytes 0-9/10")]), asked: (0, 1_048_575), knownTotal: nil)
            == .range(first: 0, last: 9, total: 10))
        // A 200 is the whole file, whatever was asked.
        #expect(try ResponseCheck.placement(of: head(200, [("Content-Length", "1000")]), asked: (100, nil),
                                            knownTotal: 1000) == .whole(total: 1000))
        #expect(try ResponseCheck.placement(of: head(200, []), asked: nil, knownTotal: nil) == .whole(total: nil))
    }

    @Test(arguments: [
        (206, [("Content-Range", "bytes 0-2999999/5000000")], "to a request for bytes 2000000-"),
        (206, [("Content-Range", "bytes 2000000-2999999/5000000")], "to a request for bytes 2000000-"),
        (206, [("Content-Range", "bytes 2000000-4999999/6000000")], "to a request for bytes 2000000-"),
        (206, [("Content-Range", "bytes 2000000-5999999/6000000")], "not 5000000 as before"),
        (206, [("Content-Range", "bytes 2000000-4999999/5000000"), ("Content-Length", "12")], "contradicts"),
        (206, [("Content-Range", "bytes 2000000-4999999/*")], ""),
        (206, [], "without a valid Content-Range"),
        (206, [("Content-Range", "bytes 2000000-4999999/5000000"), ("Content-Type", "multipart/byteranges; b=x")],
         "several ranges"),
    ])
    func wrongAnswersToAResumeAreProtocolErrors(status: Int, headers: [(String, String)], says: String) {
        let answer = head(status, headers)
        if says.isEmpty {
            #expect(throws: Never.self) {
                try ResponseCheck.placement(of: answer, asked: (2_000_000, nil), knownTotal: 5_000_000)
            }
            return
        }
        #expect {
            try ResponseCheck.placement(of: answer, asked: (2_000_000, nil), knownTotal: 5_000_000)
        } throws: { error in
            (error as? HaulError)?.category == .protocol && (error as? HaulError)?.message.contains(says) == true
        }
    }

    @Test func aSegmentMustBeTheRangeAskedFor() {
        for range in ["bytes 1-1048576/50000000", "bytes 0-1048576/50000000", "bytes 0-1048574/50000000"] {
            #expect(throws: HaulError.self) {
                try ResponseCheck.placement(of: head(206, [("Content-Range", range)]), asked: (0, 1_048_575),
                                            knownTotal: 50_000_000)
            }
        }
        #expect(throws: HaulError.self) {
            try ResponseCheck.placement(of: head(206, [("Content-Range", "bytes 0-9/10")]), asked: nil, knownTotal: nil)
        }
    }

    @Test func unsatisfiedRangesTellTheSize() {
        #expect(head(416, [("Content-Range", "bytes */5000")]).unsatisfiedRangeTotal == 5000)
        #expect(head(416, [("Content-Range", "bytes */x")]).unsatisfiedRangeTotal == nil)
        #expect(head(416, []).unsatisfiedRangeTotal == nil)
    }
}
