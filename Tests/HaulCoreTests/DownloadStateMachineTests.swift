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

    // MARK: segments

    @Test func aSegmentedDownloadSplitsAsSoonAsTheProbesHeadSaysRangesWork() throws {
        var machine = machine(segments: 4)
        #expect(machine.begin(resume: nil) == .request(ask(0, Self.mib - 1)))
        let total = 20 * Self.mib
        let action = try machine.headArrived(head(206, [("Content-Range", "bytes 0-1048575/\(total)"), ("ETag", "\"v1\"")]))
        // Not after the probe's body: every connection starts now, the probe's going on with its range.
        #expect(action == .segmented(first: Body(start: 0, end: Self.mib, total: total, fresh: fresh(total: total),
                                                 announce: true, continuable: true), total: total))
        #expect(machine.segmentsEnded() == .finish(received: total, announce: nil))
    }

    @Test func aResumedSegmentedDownloadCountsWhatWasMissing() throws {
        var machine = machine(segments: 4)
        let total = 20 * Self.mib
        let kept = state([ByteRange(0, 2 * Self.mib), ByteRange(10 * Self.mib, 12 * Self.mib)], total: total)
        #expect(machine.begin(resume: kept) == .request(ask(2 * Self.mib, 3 * Self.mib - 1, ifRange: "\"v1\"")))
        let action = try machine.headArrived(head(206, [("Content-Range", "bytes 2097152-3145727/\(total)"),
                                                        ("ETag", "\"v1\"")]))
        #expect(action == .segmented(first: Body(start: 2 * Self.mib, end: 3 * Self.mib, total: total, announce: true,
                                                 continuable: true),
                                     total: total))
        // 16 MiB were missing, the probe's range among them.
        #expect(machine.segmentsEnded() == .finish(received: 16 * Self.mib, announce: nil))
    }

    @Test func aProbeAnsweredWholeIsOneConnection() throws {
        var machine = machine(segments: 4)
        _ = machine.begin(resume: nil)
        let action = try machine.headArrived(head(200, [("Content-Length", "20971520"), ("ETag", "\"v1\"")]))
        #expect(action == .stream(Body(start: 0, end: 20 * Self.mib, total: 20 * Self.mib,
                                       fresh: fresh(total: 20 * Self.mib), announce: true,
                                       notice: .oneConnection(reason: .noRanges))))
        #expect(machine.bodyEnded(at: 20 * Self.mib, elapsed: .zero, resume: nil)
                == .finish(received: 20 * Self.mib, announce: nil))
    }

    @Test func aResumedProbeAnsweredWholeSaysTheResumeWasRefusedInstead() throws {
        var machine = machine(segments: 4)
        _ = machine.begin(resume: state([ByteRange(0, 4000)]))
        let action = try machine.headArrived(head(200, [("Content-Length", "10000"), ("ETag", "\"v1\"")]))
        guard case .stream(let body) = action else {
            Issue.record("expected a body, got \(action)")
            return
        }
        #expect(body.refused == .resumeRefused(part: "f.bin.part", reason: .rangeIgnored(status: 200)))
        #expect(body.notice == nil)
    }

    @Test func aFileSmallerThanTheProbeIsDoneAfterIt() throws {
        var machine = machine(segments: 8)
        _ = machine.begin(resume: nil)
        _ = try machine.headArrived(head(206, [("Content-Range", "bytes 0-9/10"), ("ETag", "\"v1\"")]))
        #expect(machine.bodyEnded(at: 10, elapsed: .zero, resume: state([ByteRange(0, 10)], total: 10))
                == .finish(received: 10, announce: nil))
    }

    @Test func aSizeTheServerWillNotTellMeansTheRestOverOneConnection() throws {
        var machine = machine(segments: 4)
        _ = machine.begin(resume: nil)
        let probe = try machine.headArrived(head(206, [("Content-Range", "bytes 0-1048575/*"), ("ETag", "\"v1\"")]))
        #expect(probe == .stream(Body(start: 0, end: Self.mib, total: nil, fresh: fresh(total: nil), announce: true,
                                      continuable: true)))
        let probed = state([ByteRange(0, Self.mib)], total: nil)
        #expect(machine.bodyEnded(at: Self.mib, elapsed: .zero, resume: probed)
                == .request(ask(Self.mib, ifRange: "\"v1\"")))
        // The rest is not news: same file, same (unknown) size.
        #expect(try machine.headArrived(head(206, [("Content-Range", "bytes 1048576-3145727/*"), ("ETag", "\"v1\"")]))
                == .stream(Body(start: Self.mib, end: 3 * Self.mib, total: nil, continuable: true)))
        // The result counts the probe's bytes too.
        #expect(machine.bodyEnded(at: 3 * Self.mib, elapsed: .zero, resume: nil)
                == .finish(received: 3 * Self.mib, announce: nil))
    }

    @Test func anUnknownSizeWithoutValidatorsStartsOverOverOneConnection() throws {
        var machine = machine(segments: 4)
        _ = machine.begin(resume: nil)
        _ = try machine.headArrived(head(206, [("Content-Range", "bytes 0-1048575/*")]))
        let probed = state([ByteRange(0, Self.mib)], total: nil, etag: nil)
        #expect(machine.bodyEnded(at: Self.mib, elapsed: .zero, resume: probed)
                == .restart(why: .resumeRefused(part: "f.bin.part", reason: .noValidators), ask()))
    }

    @Test func aRefusedSegmentGoesOnOverOneConnection() throws {
        var machine = machine(segments: 4)
        let total = 20 * Self.mib
        _ = machine.begin(resume: nil)
        _ = try machine.headArrived(head(206, [("Content-Range", "bytes 0-1048575/\(total)"), ("ETag", "\"v1\"")]))
        let fetched = state([ByteRange(0, 3 * Self.mib), ByteRange(8 * Self.mib, 9 * Self.mib)], total: total)
        #expect(machine.segmentRefused(status: 200, resume: fetched)
                == .oneConnection(why: .oneConnection(reason: .segmentRefused(status: 200)),
                                  then: .request(ask(3 * Self.mib, ifRange: "\"v1\""))))
        _ = try machine.headArrived(head(206, [("Content-Range", "bytes 3145728-20971519/\(total)"), ("ETag", "\"v1\"")]))
        #expect(machine.bodyEnded(at: total, elapsed: .zero, resume: nil) == .finish(received: 17 * Self.mib, announce: nil))
    }

    // MARK: retries

    @Test func transientFailuresAreRetriedFromWhatWasKeptThenGivenUp() {
        var machine = machine(retries: 2)
        _ = machine.begin(resume: nil)
        let reset = HaulError(.network, "connection reset")
        let kept = state([ByteRange(0, 4000)])
        for attempt in 1...2 {
            guard case .retry(let delay, let fact) = machine.failed(reset, cancelled: false, resume: kept) else {
                Issue.record("attempt \(attempt) is retried")
                return
            }
            // 50 % to 100 % of 500 ms * 2^(n-1).
            let base = Duration.milliseconds(500) * (1 << (attempt - 1))
            #expect(delay >= base / 2 && delay <= base)
            #expect(fact == .retrying(attempt: attempt, of: 2, delaySeconds: delay.seconds, resumeAt: 4000, reason: reset))
            #expect(machine.begin(resume: kept) == .request(ask(4000, ifRange: "\"v1\"")))
        }
        #expect(machine.failed(reset, cancelled: false, resume: kept) == .fail(reset))
    }

    /// A download retried in the same run counts every byte the run fetched, as its time counts every attempt:
    /// what the first attempt kept (beyond what an earlier run had left) and the rest after the retry.
    @Test func aRetriedDownloadCountsTheBytesOfEveryAttempt() throws {
        var machine = machine()
        _ = machine.begin(resume: state([ByteRange(0, 1000)]))  // an earlier run left 1000 bytes
        let reset = HaulError(.network, "connection reset")
        guard case .retry = machine.failed(reset, cancelled: false, resume: state([ByteRange(0, 4000)])) else {
            Issue.record("retried")
            return
        }
        #expect(machine.begin(resume: state([ByteRange(0, 4000)])) == .request(ask(4000, ifRange: "\"v1\"")))
        _ = try machine.headArrived(head(206, [("Content-Range", "bytes 4000-9999/10000"), ("ETag", "\"v1\"")]))
        #expect(machine.bodyEnded(at: 10_000, elapsed: .zero, resume: nil) == .finish(received: 9000, announce: nil))
    }

    /// Between attempts nothing of the failed one is left (its base, its bytes): a failure there, before the
    /// retry begins, counts no byte of the attempt before a second time.
    @Test func aFailureBetweenAttemptsCountsTheAttemptBeforeOnce() throws {
        var machine = machine()
        _ = machine.begin(resume: nil)
        let reset = HaulError(.network, "connection reset")
        let kept = state([ByteRange(0, 4000)])
        for failure in 1...2 {
            guard case .retry = machine.failed(reset, cancelled: false, resume: kept) else {
                Issue.record("failure \(failure) is retried")
                return
            }
        }
        #expect(machine.begin(resume: kept) == .request(ask(4000, ifRange: "\"v1\"")))
        _ = try machine.headArrived(head(206, [("Content-Range", "bytes 4000-9999/10000"), ("ETag", "\"v1\"")]))
        #expect(machine.bodyEnded(at: 10_000, elapsed: .zero, resume: nil) == .finish(received: 10_000, announce: nil))
    }

    @Test func retryAfterIsTheDelay() {
        var machine = machine()
        _ = machine.begin(resume: nil)
        let busy = HaulError(.server, "server answered 503 Service Unavailable", httpStatus: 503, retryAfter: .seconds(2))
        #expect(machine.failed(busy, cancelled: false, resume: nil)
                == .retry(after: .seconds(2), .retrying(attempt: 1, of: 5, delaySeconds: 2, resumeAt: 0, reason: busy)))
    }

    @Test(arguments: [
        (HaulError(.server, "503", httpStatus: 503), true),
        (HaulError(.server, "408", httpStatus: 408), true),
        (HaulError(.server, "429", httpStatus: 429), true),
        (HaulError(.server, "404", httpStatus: 404), false),
        (HaulError(.protocol, "wrong range"), false),
        (HaulError(.fileIO, "disk full"), false),
        (HaulError(.checksum, "mismatch"), false),
    ])
    func onlyFailuresThatMayPassAreRetried(error: HaulError, retried: Bool) {
        var machine = machine()
        _ = machine.begin(resume: nil)
        let action = machine.failed(error, cancelled: false, resume: nil)
        if retried {
            guard case .retry = action else {
                Issue.record("\(error) is retried, got \(action)")
                return
            }
        } else {
            #expect(action == .fail(error))
        }
    }

    @Test func noRetriesMeansTheFirstFailureEndsIt() {
        var machine = machine(retries: 0)
        _ = machine.begin(resume: nil)
        let reset = HaulError(.network, "connection reset")
        #expect(machine.failed(reset, cancelled: false, resume: nil) == .fail(reset))
    }

    @Test func aCancelledTaskIsCancelledWhateverTheError() {
        var machine = machine()
        _ = machine.begin(resume: nil)
        #expect(machine.failed(HaulError(.network, "reset"), cancelled: true, resume: nil) == .cancelled)
        #expect(machine.failed(HaulError(.cancelled, "cancelled"), cancelled: false, resume: nil) == .cancelled)
    }

    @Test func aRetryBeginsWithTheJobsConnectionsAndNamingAgain() throws {
        var machine = machine(segments: 4, name: "download")
        let total = 20 * Self.mib
        _ = machine.begin(resume: nil)
        _ = try machine.headArrived(head(206, [("Content-Range", "bytes 0-1048575/\(total)"), ("ETag", "\"v1\"")]))
        let kept = state([ByteRange(0, 3 * Self.mib)], total: total)
        _ = machine.segmentRefused(status: 200, resume: kept)
        _ = machine.failed(HaulError(.network, "reset"), cancelled: false, resume: kept)
        // Probing again, and the server may name the file.
        #expect(machine.begin(resume: kept) == .request(ask(3 * Self.mib, 4 * Self.mib - 1, ifRange: "\"v1\"")))
        let named = head(206, [("Content-Range", "bytes 3145728-4194303/\(total)"),
                               ("Content-Disposition", "attachment; filename=\"report.bin\"")])
        #expect(try machine.headArrived(named) == .move(to: "report.bin"))
    }

    @Test func anErrorStatusEndsTheAttempt() {
        var machine = machine()
        _ = machine.begin(resume: nil)
        #expect(throws: HaulError(.server, "server answered 404 Not Found", httpStatus: 404)) {
            try machine.headArrived(head(404))
        }
    }
}

extension DownloadStateMachineTests {
    /// After a crash other connections' ranges lie past the prefix: the probe stops where they begin.
    @Test func aResumedProbeNeverAsksForBytesThePartHolds() {
        var machine = machine(segments: 4)
        let kept = state([ByteRange(0, 2 * Self.mib), ByteRange(2 * Self.mib + 4096, 5 * Self.mib)], total: 20 * Self.mib)
        #expect(machine.begin(resume: kept) == .request(ask(2 * Self.mib, 2 * Self.mib + 4095, ifRange: "\"v1\"")))
    }
}

/// The watch on the connection that went on alone, on instants of a manual clock.
@Suite struct LoneWatchTests {
    @Test func firesOnceWhenAWindowBringsLessThanHalfTheRace() {
        let start = ManualClock().now
        var watch = LoneWatch(window: .seconds(1), raceRate: 100, from: start)
        #expect(watch.slowed(bytes: 40, at: start.advanced(by: .milliseconds(500))) == nil, "the window runs")
        #expect(watch.slowed(bytes: 10, at: start.advanced(by: .seconds(1))) == nil, "50 per second: half, not less")
        #expect(watch.slowed(bytes: 20, at: start.advanced(by: .seconds(2))) == 20, "a new window: 20 per second")
        #expect(watch.slowed(bytes: 0, at: start.advanced(by: .seconds(9))) == nil, "once")
    }
}

/// The race of `-s N`'s connections, on instants of a manual clock.
@Suite struct RaceJudgeTests {
    @Test func judgedOnceWhenTheWindowHasPassedAndEveryConnectionHasBroughtBytes() {
        let start = ManualClock().now
        var fast = RaceJudge(window: .seconds(1), notLimited: 100, earlyBytes: 50, workers: 2, from: start)
        #expect(fast.verdict(worker: 0, bytes: 500, at: start.advanced(by: .seconds(2))) == nil, "worker 1 has not shown")
        #expect(fast.verdict(worker: 1, bytes: 300, at: start.advanced(by: .seconds(2))) == 150, "the slowest: 300 in 2 s")
        #expect(fast.verdict(worker: 1, bytes: 300, at: start.advanced(by: .seconds(3))) == nil, "once")

        var early = RaceJudge(window: .seconds(1), notLimited: 100, earlyBytes: 50, workers: 2, from: start)
        _ = early.verdict(worker: 0, bytes: 500, at: start)
        #expect(early.verdict(worker: 1, bytes: 49, at: start.advanced(by: .milliseconds(100))) == nil,
                "the window runs while one has brought less than the early verdict asks, however fast")
        #expect(early.verdict(worker: 1, bytes: 1, at: start.advanced(by: .milliseconds(500))) == 100,
                "every one has brought the early bytes at the bar: the verdict comes at once, 50 in half a second")
        #expect(early.verdict(worker: 1, bytes: 500, at: start.advanced(by: .seconds(2))) == nil, "once")

        // A burst, then the limit: 40 at once and 20 per second after. It has brought the early bytes by
        // half a second (50), at 100 per second, which is the bar: not below it.
        var burst = RaceJudge(window: .seconds(1), notLimited: 100, earlyBytes: 50, workers: 2, from: start)
        _ = burst.verdict(worker: 0, bytes: 500, at: start)
        _ = burst.verdict(worker: 1, bytes: 40, at: start.advanced(by: .milliseconds(1)))
        #expect(burst.verdict(worker: 1, bytes: 6, at: start.advanced(by: .milliseconds(300))) == nil,
                "the early bytes not yet in")
        #expect(burst.verdict(worker: 1, bytes: 6, at: start.advanced(by: .milliseconds(600))) == nil,
                "the early bytes in (52), but at 87 per second: the limit shows through the burst")
        #expect(burst.verdict(worker: 1, bytes: 8, at: start.advanced(by: .seconds(1))) == nil,
                "and at the window's end it is still below the bar: all stay")

        var limited = RaceJudge(window: .seconds(1), notLimited: 100, earlyBytes: 50, workers: 2, from: start)
        _ = limited.verdict(worker: 0, bytes: 5000, at: start)
        #expect(limited.verdict(worker: 1, bytes: 50, at: start.advanced(by: .seconds(1))) == nil, "one held back: all stay")
    }
}
