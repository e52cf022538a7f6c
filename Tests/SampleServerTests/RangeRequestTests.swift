import Testing

@testable import SampleServer

@Suite("Range header parsing")
struct RangeRequestTests {
    @Test(arguments: [
        ("bytes=0-99", RangeRequest.partial(0...99)),
        ("bytes=100-", .partial(100...999)),
        ("bytes=-100", .partial(900...999)),
        ("bytes=-5000", .partial(0...999)),
        ("bytes=990-5000", .partial(990...999)),
        ("BYTES = 5-5", .whole),
        ("Bytes=5-5", .partial(5...5)),
        (" bytes=1-2 ", .partial(1...2)),
        ("bytes=1000-", .unsatisfiable),
        ("bytes=1000-2000", .unsatisfiable),
        ("bytes=-0", .unsatisfiable),
        ("bytes=0-1,5-6", .whole),
        ("bytes=5-1", .whole),
        ("bytes=abc", .whole),
        ("bytes=-", .whole),
        ("bytes=+1-2", .whole),
        ("items=0-1", .whole),
        ("", .whole),
    ])
    func parsesAgainstAThousandBytes(header: String, expected: RangeRequest) {
        #expect(RangeRequest(header: header, size: 1_000) == expected)
    }

    @Test func missingHeaderMeansWhole() {
        #expect(RangeRequest(header: nil, size: 10) == .whole)
    }

    @Test func nothingIsSatisfiableInAnEmptyFile() {
        #expect(RangeRequest(header: "bytes=0-", size: 0) == .unsatisfiable)
        #expect(RangeRequest(header: "bytes=-1", size: 0) == .unsatisfiable)
    }

    @Test func hugeNumbersAreMalformedNotCrashes() {
        #expect(RangeRequest(header: "bytes=0-99999999999999999999999", size: 10) == .whole)
    }
}
