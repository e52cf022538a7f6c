import Testing
import TestSupport
@testable import HaulCore

/// The download protocol's decisions, without a socket or a file: heads in, actions out.
@Suite struct DownloadStateMachineTests {
    typealias Machine = DownloadStateMachine
    typealias Request = DownloadStateMachine.Request
    typealias Body = DownloadStateMachine.Body

    static let url = "http://h/f.bin"
    static let mib: Int64 = 1 << 20

    func machine(segments: Int = 1, retries: Int = 5, outputName: String? = nil, name: String = "f.bin") -> Machine {
        var job = DownloadJob(url: Self.url, outputDirectory: "/nowhere", outputName: outputName)
        job.segments = segments
        job.retries = retries
        return Machine(job: job, name: name, retryPolicy: RetryPolicy())
    }

    func head(_ status: Int, _ headers: [(String, String)] = []) -> ResponseHead {
        ResponseHead(status: status, headers: headers.map { (name: $0.0, value: $0.1) }, effectiveURL: Self.url)
    }

    func state(_ ranges: [ByteRange], total: Int64? = 10_000, etag: String? = "\"v1\"",
               lastModified: String? = nil) -> ResumeState {
        ResumeState(url: Self.url, etag: etag, lastModified: lastModified, total: total, completed: ranges)
    }

    func ask(_ first: Int64? = nil, _ last: Int64? = nil, ifRange: String? = nil) -> Request {
        Request(range: first.map { Machine.AskedRange(first: $0, last: last) }, ifRange: ifRange)
    }

    func fresh(total: Int64?, etag: String? = "\"v1\"") -> ResumeState {
        ResumeState(url: Self.url, etag: etag, lastModified: nil, total: total)
    }

    // MARK: one connection

    @Test func aFreshDownloadAsksForTheWholeFileAndFinishesWithIt() throws {
        var machine = machine()
        #expect(machine.begin(resume: nil) == .request(ask()))
        let action = try machine.headArrived(head(200, [("Content-Length", "10000"), ("ETag", "\"v1\"")]))
        #expect(action == .stream(Body(start: 0, end: 10_000, total: 10_000, fresh: fresh(total: 10_000),
                                       announce: true)))
        #expect(machine.bodyEnded(at: 10_000, elapsed: .seconds(1), resume: nil)
                == .finish(received: 10_000, announce: nil))
    }

    @Test func aResumeAsksForTheRestWithIfRangeAndCountsOnlyTheRest() throws {
        var machine = machine()
        let kept = state([ByteRange(0, 4000)])
        #expect(machine.begin(resume: kept) == .request(ask(4000, ifRange: "\"v1\"")))
        let action = try machine.headArrived(head(206, [("Content-Range", "bytes 4000-9999/10000"),
                                                        ("ETag", "\"v1\"")]))
        #expect(action == .stream(Body(start: 4000, end: 10_000, total: 10_000, announce: true, continuable: true)))
        #expect(machine.bodyEnded(at: 10_000, elapsed: .zero, resume: nil) == .finish(received: 6000, announce: nil))
    }

    @Test func withoutAnETagIfRangeSendsLastModified() {
        var machine = machine()
        let kept = state([ByteRange(0, 4000)], etag: nil, lastModified: "Sun, 09 Sep 2001 01:46:40 GMT")
        #expect(machine.begin(resume: kept) == .request(ask(4000, ifRange: "Sun, 09 Sep 2001 01:46:40 GMT")))
    }

    @Test func aPartWithoutValidatorsStartsOverAndSaysWhy() {
        var machine = machine()
        let kept = state([ByteRange(0, 4000)], etag: nil, lastModified: nil)
        #expect(machine.begin(resume: kept)
                == .restart(why: .resumeRefused(part: "f.bin.part", reason: .noValidators), ask()))
        // A state with nothing in it has nothing to splice: no notice.
        var empty = self.machine()
        #expect(empty.begin(resume: state([], etag: nil)) == .request(ask()))
    }

    @Test func aRangeIgnoredMeansTheWholeFileFromByteZero() throws {
        var machine = machine()
        _ = machine.begin(resume: state([ByteRange(0, 4000)]))
        let action = try machine.headArrived(head(200, [("Content-Length", "10000"), ("ETag", "\"v1\"")]))
        #expect(action == .stream(Body(start: 0, end: 10_000, total: 10_000,
                                       refused: .resumeRefused(part: "f.bin.part", reason: .rangeIgnored(status: 200)),
                                       fresh: fresh(total: 10_000), announce: true)))
        #expect(machine.bodyEnded(at: 10_000, elapsed: .zero, resume: nil) == .finish(received: 10_000, announce: nil))
    }

    @Test(arguments: [
        // The ETag changed.
        ([("ETag", "\"v2\"")], "\"v1\"", nil),
        // No ETag kept, and Last-Modified changed.
        ([("Last-Modified", "Mon, 10 Sep 2001 01:46:40 GMT")], nil, "Sun, 09 Sep 2001 01:46:40 GMT"),
    ] as [([(String, String)], String?, String?)])
    func changedValidatorsMeanStartingOver(headers: [(String, String)], etag: String?, lastModified: String?) throws {
        var machine = machine()
        _ = machine.begin(resume: state([ByteRange(0, 4000)], etag: etag, lastModified: lastModified))
        let action = try machine.headArrived(head(200, [("Content-Length", "10000")] + headers))
        guard case .stream(let body) = action else {
            Issue.record("expected a body, got \(action)")
            return
        }
        #expect(body.refused == .resumeRefused(part: "f.bin.part", reason: .validatorsChanged))
        #expect(body.start == 0 && body.fresh != nil)
    }

    @Test func aResumeAnsweredWithTheWrongRangeIsAProtocolError() {
        var machine = machine()
        _ = machine.begin(resume: state([ByteRange(0, 4000)]))
        #expect(throws: HaulError.self) {
            try machine.headArrived(head(206, [("Content-Range", "bytes 0-9999/10000")]))
        }
    }

    // MARK: 416

    @Test func a416ForAWholePartFinishesWithoutABody() throws {
        var machine = machine()
        let whole = state([ByteRange(0, 10_000)])
        #expect(machine.begin(resume: whole) == .request(ask(10_000, ifRange: "\"v1\"")))
        let action = try machine.headArrived(head(416, [("Content-Range", "bytes */10000"), ("ETag", "\"v1\"")]))
        #expect(action == .finish(received: 0, announce: 10_000))
    }

    @Test func a416AfterAnAnnouncementDoesNotAnnounceAgain() throws {
        var machine = machine()
        _ = machine.begin(resume: nil)
        _ = try machine.headArrived(head(200, [("Content-Length", "10000"), ("ETag", "\"v1\"")]))
        let failure = HaulError(.network, "connection reset")
        guard case .retry = machine.failed(failure, cancelled: false, resume: state([ByteRange(0, 10_000)])) else {
            Issue.record("a network error is retried")
            return
        }
        _ = machine.begin(resume: state([ByteRange(0, 10_000)]))
        // The bytes came in this run, in the attempt before.
        #expect(try machine.headArrived(head(416, [("Content-Range", "bytes */10000")]))
                == .finish(received: 10_000, announce: nil))
    }

    @Test(arguments: [
        [("Content-Range", "bytes */12000")],  // another size than the part's
        [("Content-Range", "bytes */10000"), ("ETag", "\"v2\"")],  // another version
        [],  // no size at all
    ])
    func a416ForAnythingElseStartsOver(headers: [(String, String)]) throws {
        var machine = machine()
        _ = machine.begin(resume: state([ByteRange(0, 10_000)]))
        #expect(try machine.headArrived(head(416, headers))
                == .restart(why: .resumeRefused(part: "f.bin.part", reason: .refusedAt(offset: 10_000)), ask()))
        // The new request is answered as a fresh download's.
        #expect(try machine.headArrived(head(200, [("Content-Length", "10000"), ("ETag", "\"v1\"")]))
                == .stream(Body(start: 0, end: 10_000, total: 10_000, fresh: fresh(total: 10_000), announce: true)))
    }

    @Test func aStateWhoseTotalDisagreesWithThe416StartsOver() throws {
        var machine = machine()
        _ = machine.begin(resume: state([ByteRange(0, 10_000)], total: 20_000))
        #expect(try machine.headArrived(head(416, [("Content-Range", "bytes */10000")]))
                == .restart(why: .resumeRefused(part: "f.bin.part", reason: .refusedAt(offset: 10_000)), ask()))
    }

    @Test func a416ToARequestFromZeroIsAnError() {
        var machine = machine()
        _ = machine.begin(resume: nil)
        #expect(throws: HaulError(.protocol, "server answered 416 Range Not Satisfiable", httpStatus: 416)) {
            try machine.headArrived(head(416, [("Content-Range", "bytes */10000")]))
        }
    }

    // MARK: names

    @Test func theServersNameMovesTheClaimBeforeAByteIsWritten() throws {
        var machine = machine(name: "download")
        _ = machine.begin(resume: nil)
        let answer = head(200, [("Content-Length", "10000"), ("Content-Disposition", "attachment; filename=\"report.pdf\"")])
        #expect(try machine.headArrived(answer) == .move(to: "report.pdf"))
        // Nothing to resume there: this answer's body goes into the new part.
        #expect(try machine.claimMoved(to: "report.pdf", resume: nil)
                == .stream(Body(start: 0, end: 10_000, total: 10_000, fresh: fresh(total: 10_000, etag: nil),
                                announce: true)))
        #expect(machine.name == "report.pdf")
    }

    @Test func aMovedClaimWithAPartToResumeAsksAgainAndMovesNoMore() throws {
        var machine = machine(name: "download")
        _ = machine.begin(resume: nil)
        let named = ("Content-Disposition", "attachment; filename=\"report.pdf\"")
        #expect(try machine.headArrived(head(200, [("Content-Length", "10000"), named])) == .move(to: "report.pdf"))
        let kept = state([ByteRange(0, 4000)])
        #expect(try machine.claimMoved(to: "report.pdf", resume: kept) == .request(ask(4000, ifRange: "\"v1\"")))
        // Even if the server names it otherwise now, and the facts name the new part.
        let action = try machine.headArrived(head(200, [("Content-Length", "10000"), ("ETag", "\"v2\""),
                                                        ("Content-Disposition", "attachment; filename=\"other.pdf\"")]))
        guard case .stream(let body) = action else {
            Issue.record("expected a body, got \(action)")
            return
        }
        #expect(body.refused == .resumeRefused(part: "report.pdf.part", reason: .validatorsChanged))
    }

    @Test(arguments: [
        ("report.pdf", nil),  // already the name
        ("report.1.pdf", nil),  // the free name taken for it
        ("download", "mine.bin"),  // -O: the user's name wins
    ] as [(String, String?)])
    func noMoveForTheNameItHasOrAUsersName(name: String, outputName: String?) throws {
        var machine = machine(outputName: outputName, name: name)
        _ = machine.begin(resume: nil)
        let action = try machine.headArrived(head(200, [("Content-Length", "10"),
                                                        ("Content-Disposition", "attachment; filename=\"report.pdf\"")]))
        guard case .stream = action else {
            Issue.record("expected a body, got \(action)")
            return
        }
    }

    /// A body may be refitted to a new cap (ended, and the rest asked for) only when the server takes ranges
    /// and names the version of the file, which the request for the rest sends back in If-Range.
    @Test func aBodyIsContinuableOnlyWithRangesAndAVersion() throws {
        let cases: [(headers: [(String, String)], status: Int, continuable: Bool)] = [
            ([("Accept-Ranges", "bytes"), ("ETag", "\"v1\""), ("Content-Length", "10")], 200, true),
            ([("Accept-Ranges", "bytes"), ("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT"), ("Content-Length", "10")], 200, true),
            ([("ETag", "\"v1\""), ("Content-Length", "10")], 200, false),
            ([("Accept-Ranges", "none"), ("ETag", "\"v1\""), ("Content-Length", "10")], 200, false),
            ([("Accept-Ranges", "bytes"), ("Content-Length", "10")], 200, false),
        ]
        for (headers, status, continuable) in cases {
            var machine = machine()
            _ = machine.begin(resume: nil)
            guard case .stream(let body) = try machine.headArrived(head(status, headers)) else {
                Issue.record("no body for \(headers)")
                continue
            }
            #expect(body.continuable == continuable, "\(headers)")
        }
    }
}
