import Testing
import TestSupport
@testable import HaulCore

/// `DownloadStateMachineTests` continued: several connections, and what a failure leads to.
extension DownloadStateMachineTests {
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
