import Foundation
import TestSupport
import Testing
@testable import HaulCore

@Suite struct SupportTests {
    @Test func exitCodesFollowThePrecedenceRule() {
        #expect(aggregateExitCode([]) == 0)
        #expect(aggregateExitCode([0, 0]) == 0)
        #expect(aggregateExitCode([0, 1]) == 1)
        #expect(aggregateExitCode([1, 8, 4]) == 4)
        #expect(aggregateExitCode([8, 130]) == 8)
        #expect(aggregateExitCode([1, 1, 0]) == 1)
    }

    @Test func everyCategoryHasItsSpecCode() {
        let codes = FailureCategory.allCases.map(\.exitCode)
        #expect(codes == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 130, 143, 129])
    }

    @Test func sizesAndRates() {
        #expect(ByteFormat.size(0) == "0 B")
        #expect(ByteFormat.size(1023) == "1023 B")
        #expect(ByteFormat.size(1536) == "1.50 KiB")
        #expect(ByteFormat.size(20 * 1024 * 1024) == "20.0 MiB")
        #expect(ByteFormat.size(200 * 1024 * 1024) == "200 MiB")
        #expect(ByteFormat.size(1 << 30) == "1.00 GiB")
        #expect(ByteFormat.rate(1_048_576) == "1.00 MiB/s")
        #expect(ByteFormat.duration(seconds: 7) == "0:07")
        #expect(ByteFormat.duration(seconds: 754) == "12:34")
        #expect(ByteFormat.duration(seconds: 3723) == "1:02:03")
        #expect(ByteFormat.duration(seconds: .infinity) == "--:--")
    }

    @Test func rates() {
        #expect(RateLimit.parse("500K") == 512_000)
        #expect(RateLimit.parse("2M") == 2_097_152)
        #expect(RateLimit.parse("1.5m") == 1_572_864)
        #expect(RateLimit.parse("65536") == 65_536)
        #expect(RateLimit.parse("1G") == 1_073_741_824)
        #expect(RateLimit.parse("fast") == nil)
        #expect(RateLimit.parse("-1M") == nil)
        #expect(RateLimit.parse("0") == nil)
        #expect(RateLimit.parse("3X") == nil)
    }

    @Test func statusesMapToCategories() {
        func category(_ status: Int) -> FailureCategory? {
            do {
                try HTTPStatus.check(ResponseHead(status: status, headers: [], effectiveURL: "http://h/"))
                return nil
            } catch {
                return error.category
            }
        }
        #expect(category(200) == nil)
        #expect(category(206) == nil)
        #expect(category(401) == .authentication)
        #expect(category(407) == .authentication)
        #expect(category(404) == .server)
        #expect(category(503) == .server)
        #expect(category(416) == .protocol)
        #expect(category(304) == .protocol)
    }

    @Test func retryAfterSecondsAndDates() {
        #expect(HTTPStatus.retryAfter("3") == .seconds(3))
        let now = Date(timeIntervalSince1970: 1_000_000_000)
        #expect(HTTPStatus.retryAfter("Sun, 09 Sep 2001 01:46:50 GMT", now: now) == .seconds(10))
        #expect(HTTPStatus.retryAfter("soon") == nil)
    }

    /// The three forms of RFC 9110 read alike, whatever the locale; IMF-fixdate written back.
    @Test func httpDatesInEveryFormAndBack() {
        let stamp = Date(timeIntervalSince1970: 784_111_777)
        for form in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            #expect(HTTPDate.parse(form) == stamp, "\(form)")
        }
        #expect(HTTPDate.format(stamp) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 951_782_400.75)) == "Tue, 29 Feb 2000 00:00:00 GMT")
        for noDate in ["", "soon", "Sun\u{0}, 06 Nov 1994"] {
            #expect(HTTPDate.parse(noDate) == nil, "\(noDate)")
        }
    }

    /// Found by the fuzz pass: DateFormatter trapped on these, so one 503 answer ended the process.
    @Test(arguments: ["Mo\u{200D}", "Sun, 09 Sep 2001 01:46:50 GMT\u{301}", "Sun, 0\u{301}9 Sep"])
    func retryAfterWithAGraphemeClusterIsNoDate(value: String) {
        #expect(HTTPStatus.retryAfter(value) == nil)
    }

    /// Found by the fuzz pass: Int64(_:) takes a sign, and a total that is not a number was taken for "*".
    /// The fields haul reads are found when the head is made: the first of each, whatever its case, past
    /// any number of other headers; one beyond the 254th is looked up by name.
    @Test func theFieldsHaulReadsAreTheFirstOfTheirName() {
        let many = (0..<300).map { (name: "X-\($0)", value: "\($0)") }
        let headers = [("etag", "\"a\""), ("ETAG", "\"b\""), ("Content-Type", "text/plain"), ("last-modified", "L")]
            + many + [("Accept-Ranges", "bytes"), ("Retry-After", "5")]
        let head = ResponseHead(status: 200, headers: headers, effectiveURL: "")
        #expect(head[.eTag] == "\"a\"" && head[.contentType] == "text/plain" && head[.lastModified] == "L")
        #expect(head[.acceptRanges] == "bytes" && head[.retryAfter] == "5")
        #expect(head[.contentRange] == nil && head[.contentDisposition] == nil && head[.contentLength] == nil)
        #expect(head["ETAG"] == "\"a\"" && head["X-299"] == "299")
    }

    @Test(arguments: ["-3", "+5", "9223372036854775808", "", "1 0"])
    func contentLengthIsDigitsOnly(value: String) {
        #expect(ResponseHead(status: 200, headers: [("Content-Length", value)], effectiveURL: "").contentLength == nil)
    }

    @Test(arguments: [
        "bytes 0-0//",  // was (0, 0, nil)
        "bytes 1-1/v",  // was (1, 1, nil)
        "bytes 0-10/5",  // last past the total
        "bytes 5-9/-3",  // a negative total
        "bytes -5-10/20",  // was (5, 10, 20): the empty first bound was dropped
        "bytes +0-+5/10",
        "bytes 0-9223372036854775807/*",  // the downloader's end, last + 1, would overflow
    ])
    func contentRangeRejectsWhatNoDownloadCanUse(value: String) {
        #expect(ResponseHead(status: 206, headers: [("Content-Range", value)], effectiveURL: "").contentRange == nil)
    }

    @Test func contentRangeEdges() throws {
        func range(_ value: String) throws -> (first: Int64, last: Int64, total: Int64?) {
            try #require(ResponseHead(status: 206, headers: [("Content-Range", value)], effectiveURL: "").contentRange)
        }
        #expect(try range("bytes 0-9223372036854775806/*") == (0, .max - 1, nil))
        #expect(try range("BYTES 0-0/1") == (0, 0, 1))
        #expect(try range("bytes 7-8/9223372036854775807") == (7, 8, .max))
    }

    @Test func responseHeadParsing() {
        var builder = ResponseHead.Builder()
        for line in ["HTTP/1.1 302 Found\r\n", "Location: /x\r\n", "\r\n", "HTTP/1.1 206 Partial Content\r\n",
                     "Content-Length: 10\r\n", "content-range: bytes 10-19/100\r\n", "\r\n"] {
            builder.add(line: line)
        }
        let head = ResponseHead(status: 206, headers: builder.lines, effectiveURL: "http://h/x")
        #expect(head.headers.count == 2)
        #expect(head.contentLength == 10)
        #expect(head.contentRange?.first == 10)
        #expect(head.contentRange?.last == 19)
        #expect(head.contentRange?.total == 100)
        #expect(head["LOCATION"] == nil)
    }
}

/// An essential thread (the I/O executor's first, curl's, the terminal's) that the system refuses for a moment.
@Suite struct EssentialThreadTests {
    /// The starts asked for and the waits between them, with `results` as `pthread_create`'s answers in turn.
    private static func attempt(_ results: [Int32]) -> (code: Int32, starts: Int, waits: [UInt32]) {
        var answers = results[...]
        var starts = 0
        var waits: [UInt32] = []
        let code = EssentialThread.start(trying: {
            starts += 1
            return answers.popFirst() ?? 0
        }, wait: { waits.append($0) })
        return (code, starts, waits)
    }

    @Test func noRoomForAMomentIsWaitedOut() {
        let outcome = Self.attempt([EAGAIN, EAGAIN, EAGAIN, 0])
        #expect(outcome.code == 0)
        #expect(outcome.starts == 4)
        #expect(outcome.waits == [1, 2, 4])
    }

    @Test func noRoomForASecondGivesUp() {
        let outcome = Self.attempt(Array(repeating: EAGAIN, count: 50))
        #expect(outcome.code == EAGAIN)
        #expect(outcome.waits == EssentialThread.waits)
        #expect(outcome.waits.reduce(0, +) == 1023)
        #expect(outcome.starts == EssentialThread.waits.count + 1)
    }

    @Test func anotherRefusalIsNotRetried() {
        let outcome = Self.attempt([EPERM, 0])
        #expect(outcome.code == EPERM)
        #expect(outcome.starts == 1)
        #expect(outcome.waits.isEmpty)
    }

    @Test func aStartedThreadRunsItsBody() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            detachEssentialThread { done.resume() }
        }
    }
}
