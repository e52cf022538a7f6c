import Foundation
import Testing
@testable import HaulCore

/// The engine's facts are data: they survive a trip through JSON (the socket, the store, `--json`), and
/// every one has its words for people.
@Suite struct FactTests {
    static let every: [DownloadFact] = [
        .retrying(attempt: 2, of: 5, delaySeconds: 1.5, resumeAt: 10 << 20,
                  reason: HaulError(.server, "server answered 503 Service Unavailable", httpStatus: 503,
                                    retryAfter: .seconds(2))),
        .resumeRefused(part: "a.bin.part", reason: .noState),
        .resumeRefused(part: "a.bin.part", reason: .unreadableState),
        .resumeRefused(part: "a.bin.part", reason: .otherURL(url: "http://u:***@h/x")),
        .resumeRefused(part: "a.bin.part", reason: .shorterThanState),
        .resumeRefused(part: "a.bin.part", reason: .notWanted),
        .resumeRefused(part: "a.bin.part", reason: .noValidators),
        .resumeRefused(part: "a.bin.part", reason: .refusedAt(offset: 4096)),
        .resumeRefused(part: "a.bin.part", reason: .validatorsChanged),
        .resumeRefused(part: "a.bin.part", reason: .rangeIgnored(status: 200)),
        .partLeftAlone(part: "a.bin.part", reason: .otherURL(url: "http://elsewhere/x")),
        .partLeftAlone(part: "a.bin.part", reason: .untrusted(.symbolicLink)),
        .partLeftAlone(part: "a.bin.part", reason: .untrusted(.notRegularFile)),
        .partLeftAlone(part: "a.bin.part", reason: .untrusted(.otherOwner)),
        .partLeftAlone(part: "a.bin.part", reason: .untrusted(.otherHardLinks)),
        .savedAs(wanted: "a.bin", savedAs: "a.1.bin"),
        .oneConnection(reason: .noRanges),
        .oneConnection(reason: .segmentRefused(status: 200)),
        .split(connections: 4),
        .previewSaved(path: "/d/photo.partial.jpg"),
    ]

    @Test(arguments: every) func survivesJSON(fact: DownloadFact) throws {
        let data = try JSONEncoder().encode(fact)
        #expect(try JSONDecoder().decode(DownloadFact.self, from: data) == fact)
    }

    @Test(arguments: every) func isWordedOnOneLine(fact: DownloadFact) {
        #expect(!fact.sentence.isEmpty && !fact.sentence.contains("\n"))
    }

    @Test func wordsSayWhatHappened() {
        #expect(Self.every[0].sentence
                == "server answered 503 Service Unavailable; retry 2 of 5 in 1.5 s, resuming at 10.0 MiB")
        #expect(DownloadFact.resumeRefused(part: "a.bin.part", reason: .rangeIgnored(status: 200)).sentence
                == "the server ignored the Range request (answered 200); starting over")
        #expect(DownloadFact.partLeftAlone(part: "a.bin.part", reason: .untrusted(.symbolicLink)).sentence
                == "a.bin.part is a symbolic link; leaving it alone")
        #expect(DownloadFact.split(connections: 4).sentence == "fetching over 4 connections")
        #expect(Set(Self.every.map(\.kind)).count == 7)
    }

    @Test func jsonLinesCarryTheFactAsData() throws {
        let captured = CapturedOutput()
        JSONReporter(output: captured.text).report(.fact(id: 3, url: "http://h/a.bin", file: "a.bin", Self.every[0]))
        let line = try #require(captured.out.first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["kind"] as? String == "retrying")
        let fact = try #require(object["fact"] as? [String: Any])
        let retrying = try #require(fact["retrying"] as? [String: Any])
        #expect(retrying["attempt"] as? Int == 2 && retrying["of"] as? Int == 5)
        #expect(retrying["resumeAt"] as? Int == 10 << 20)
        #expect((retrying["reason"] as? [String: Any])?["httpStatus"] as? Int == 503)
    }
}
