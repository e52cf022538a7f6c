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

    /// A server that ignores If-Range answers a resume with a range of the file's new version: its validators
    /// show it, and the file is fetched whole rather than spliced from two versions.
    @Test(arguments: [false, true])
    func aRangeOfAnotherVersionIsNeverSpliced(lastModifiedOnly: Bool) async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            var faults = SampleServerFaults()
            if lastModifiedOnly {
                // Last-Modified alone (no ETag in the state) is checked the same way.
                let state = try await interrupted(server, dir)
                var stripped = state
                stripped.etag = nil
                try stripped.save(to: dir.file("medium.bin.part.json"))
            } else {
                _ = try await interrupted(server, dir)
            }
            faults.etagSalt = "v2"
            faults.ignoreIfRange = true
            server.setFaults(faults)
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir))
            #expect(try result.get().bytes == 20 << 20)
            #expect(facts == [.resumeRefused(part: "medium.bin.part", reason: .validatorsChanged)])
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
            #expect(dir.listing() == ["medium.bin"])
        }
    }

    /// A resume answered `206` with no validators at all (a server that ignores If-Range and sends none with
    /// its ranges): nothing says the range is of the part's version, so the file is fetched whole.
    @Test func aRangeThatNamesNoVersionIsNeverSpliced() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            _ = try await interrupted(server, dir)
            var faults = SampleServerFaults()
            faults.omitValidators = true
            server.setFaults(faults)
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir))
            #expect(try result.get().bytes == 20 << 20)
            #expect(facts == [.resumeRefused(part: "medium.bin.part", reason: .noValidators)])
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }

    /// The same over `-s 4`, where the part's version is the probe's: segments answered from another version
    /// (two versions behind one name) are a protocol error, and nothing is named done.
    @Test func segmentsOfAnotherVersionAreAProtocolError() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 8 << 20) { (server) async throws in
            var faults = SampleServerFaults()
            faults.etagSaltPastStart = "v2"
            faults.ignoreIfRange = true
            server.setFaults(faults)
            let (result, _) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir, segments: 4))
            let error = try #require(result.failure)
            #expect(error.category == .protocol, "\(error)")
            #expect(error.message.hasPrefix("the file changed on the server during the download (ETag "), "\(error)")
            #expect(!dir.listing().contains("medium.bin"))
        }
    }

    /// An answer whose Content-Length cannot frame its body (past 63 bits, or two that differ) is a protocol
    /// error before a byte is written: read as "no length", a body cut short would be named whole.
    @Test func aLengthThatCannotFrameTheBodyIsAProtocolError() async throws {
        let dir = TempDirectory()
        let cases: [(String, String)] = [
            ("Content-Length: 9223372036854775808\r\n", "is not a length"),
            ("Content-Length: 18446744073709551621\r\n", "is not a length"),
            ("Content-Length: 3000\r\nContent-Length: 100\r\n", "two lengths, 3000 and 100 bytes"),
            ("Content-Length: 100, 3000\r\n", "two lengths, 100 and 3000 bytes"),
        ]
        for (header, says) in cases {
            let server = try ScriptedAnswerServer("HTTP/1.1 200 OK\r\n\(header)Connection: close\r\n\r\n",
                                                  body: [UInt8](repeating: 7, count: 100))
            defer { server.stop() }
            var job = DownloadJob(url: server.url, outputDirectory: dir.path)
            job.retries = 0
            let (result, _) = await runQuickly(job)
            let error = try #require(result.failure, "\(header)")
            #expect(error.category == .protocol, "\(header): \(error)")
            #expect(error.message.contains(says), "\(header): \(error)")
            #expect(dir.listing().filter { !$0.hasSuffix(".part") }.isEmpty, "\(header): \(dir.listing())")
        }
    }

    /// A header line longer than libcurl reads (100 KiB), in the answer, in a redirect or in a chunked body's
    /// trailer: libcurl gives up with "out of memory" and no more words. That is the server's answer, not this
    /// machine's memory: a protocol error (exit 7, no retry: it would be the same answer) that says what
    /// came, and no file named.
    @Test func aHeaderLineTooLongToReadIsAProtocolErrorNotOutOfMemory() async throws {
        let long = String(repeating: "a", count: 300 * 1024)
        let answers: [(String, [UInt8])] = [
            ("HTTP/1.1 200 OK\r\nX-Long: \(long)\r\nContent-Length: 100\r\nConnection: close\r\n\r\n",
             [UInt8](repeating: 7, count: 100)),
            ("HTTP/1.1 302 Found\r\nLocation: /other\(long)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", []),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
             Array("64\r\n\(String(repeating: "b", count: 100))\r\n0\r\nX-Trailer: \(long)\r\n\r\n".utf8)),
        ]
        for (head, body) in answers {
            let dir = TempDirectory()
            let server = try ScriptedAnswerServer(head, body: body)
            defer { server.stop() }
            var job = DownloadJob(url: server.url, outputDirectory: dir.path)
            job.retries = 3
            let (result, facts) = await runQuickly(job)
            let error = try #require(result.failure, "\(head.prefix(20))")
            #expect(error.category == .protocol, "\(head.prefix(20)): \(error)")
            #expect(error.message.hasPrefix("the answer has a header line too long to read"),
                    "\(head.prefix(20)): \(error)")
            #expect(facts.isEmpty, "\(head.prefix(20)): no retry: \(facts)")
            #expect(!dir.listing().contains("data.bin"), "\(head.prefix(20)): \(dir.listing())")
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

    @Test func contentLengthFraming() {
        #expect(head(200, [("Content-Length", "3, 3")]).contentLength == 3)
        #expect(head(200, [("Content-Length", "3, 3")]).framingProblem == nil)
        #expect(head(200, [("Content-Length", "3"), ("content-length", "3")]).framingProblem == nil)
        #expect(head(200, []).framingProblem == nil)
        #expect(head(200, [("Content-Length", "9223372036854775807")]).framingProblem == nil)
        #expect(head(200, [("Content-Length", "9223372036854775808")]).framingProblem != nil)
        #expect(head(200, [("Content-Length", "-5")]).framingProblem != nil)
        #expect(head(200, [("Content-Length", "")]).framingProblem != nil)
        #expect(head(200, [("Content-Length", "3"), ("Content-Length", "4")]).framingProblem
                == "the server announced two lengths, 3 and 4 bytes")
        #expect(throws: HaulError.self) {
            try ResponseCheck.placement(of: head(200, [("Content-Length", "1, 2")]), asked: nil, knownTotal: nil)
        }
    }

    /// The byte-by-byte reading of Content-Length says what the rule says (RFC 9110 1*DIGIT per item of a
    /// comma list, spaces and tabs around each, values that agree), on every value built from its pieces.
    @Test func contentLengthReadingMatchesTheRule() {
        func byRule(_ values: [String]) -> (Int64?, String?) {
            var seen: Int64?
            for value in values {
                for item in value.split(separator: ",", omittingEmptySubsequences: false) {
                    let text = item.trimmingPrefix(while: { $0 == " " || $0 == "\t" })
                    let trimmed = text.reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed()
                    let digits = String(trimmed)
                    guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let length = Int64(digits)
                    else { return (nil, "the server's Content-Length \"\(value)\" is not a length") }
                    if let seen, seen != length { return (nil, "the server announced two lengths, \(seen) and \(length) bytes") }
                    seen = length
                }
            }
            return (seen, nil)
        }
        let pieces = ["", "0", "3", "03", "12", " ", "\t", ",", "-", "+", "x", "9223372036854775807",
                      "9223372036854775808", "é"]
        var values: [String] = []
        for a in pieces { for b in pieces { for c in pieces { values.append(a + b + c) } } }
        for value in values {
            for fields in [[value], [value, "3"], ["3", value]] {
                let answer = head(200, fields.map { ("Content-Length", $0) })
                let (length, problem) = byRule(fields)
                #expect(answer.contentLength == length, "\(fields)")
                #expect(answer.framingProblem == problem, "\(fields)")
            }
        }
    }

    @Test func aRangeOfAnotherVersionIsTold() {
        let etagged = head(206, [("ETag", "\"v2\""), ("Last-Modified", "Thu, 01 Jan 2026 00:00:00 GMT")])
        #expect(ResponseCheck.otherVersion(of: etagged, etag: "\"v1\"", lastModified: nil)
                == "ETag \"v2\" where the part has \"v1\"")
        #expect(ResponseCheck.otherVersion(of: etagged, etag: "\"v2\"", lastModified: "Thu, 01 Jan 2026 00:00:00 GMT") == nil)
        #expect(ResponseCheck.otherVersion(of: etagged, etag: nil, lastModified: "Wed, 31 Dec 2025 00:00:00 GMT") != nil)
        // An answer that does not carry the validator If-Range sent names no version: not the part's.
        #expect(ResponseCheck.otherVersion(of: head(206, []), etag: "\"v1\"", lastModified: "x")
                == "no ETag where the part has \"v1\"")
        #expect(ResponseCheck.otherVersion(of: head(206, []), etag: nil, lastModified: "x")
                == "no Last-Modified where the part has x")
        #expect(ResponseCheck.otherVersion(of: head(206, [("ETag", "\"v1\"")]), etag: "\"v1\"", lastModified: "x") == nil)
        #expect(ResponseCheck.otherVersion(of: etagged, etag: nil, lastModified: nil) == nil)
    }

    @Test func unsatisfiedRangesTellTheSize() {
        #expect(head(416, [("Content-Range", "bytes */5000")]).unsatisfiedRangeTotal == 5000)
        #expect(head(416, [("Content-Range", "bytes */x")]).unsatisfiedRangeTotal == nil)
        #expect(head(416, []).unsatisfiedRangeTotal == nil)
    }
}
