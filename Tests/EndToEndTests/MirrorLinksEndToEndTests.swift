import Foundation
import Testing
import TestSupport
@testable import HaulCore

/// RFC 6249 against Debian's nginx on loopback: a plain URL whose answer names the file's duplicates
/// (`add_header Link '<...>; rel=duplicate; pri=N'`) and its digest (`add_header Digest 'SHA-256=...'`), as
/// MirrorBrain servers send them. The engine is driven in process, as in `MirrorEndToEndTests`.
@Suite(.serialized) struct MirrorLinksEndToEndTests {
    static let size = 8 << 20

    /// `add_header` lines for each of `values` under `name`, single-quoted for nginx.
    static func headers(_ name: String, _ values: [String]) -> String {
        values.map { "add_header \(name) '\($0)';" }.joined(separator: " ")
    }

    /// RFC 3230's value of `hex` (a digest in hex): its bytes in base64.
    static func base64(hex: String) -> String {
        let digits = Array(hex.utf8)
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            bytes.append(UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16)!)
        }
        return Data(bytes).base64EncodedString()
    }

    @Test func duplicatesNamedByTheFirstAnswerShareTheConnections() async throws {
        let good = MirrorEndToEndTests.bytes(seed: 3)
        // Each connection limited: the race never sends one connection on alone, so each source brings bytes.
        let mirrors = try await MirrorNginx.start(blocks: ["limit_rate 2m;", "limit_rate 2m;"]) { root, _ in
            try good.write(to: URL(fileURLWithPath: root + "/file.bin"))
        }
        defer { mirrors.stop() }
        let second = mirrors.url(0, "file.bin"), first = mirrors.url(1, "file.bin")
        // Listed out of order (pri orders them) and one twice (taken once).
        let links = Self.headers("Link", ["<\(second)>; rel=duplicate; pri=2; geo=de",
                                          "<\(first)>; rel=duplicate; pri=1", "<\(second)>; rel=duplicate; pri=3"])
        // And the file's digest, right: checked as the bytes come, it lets the download end well.
        let dir = TempDirectory()
        try good.write(to: URL(fileURLWithPath: dir.file("expected.bin")))
        let digest = Self.headers("Digest", ["SHA-256=\(Self.base64(hex: try FileDigest.hex(of: dir.file("expected.bin"))))"])
        let origin = try await MirrorNginx.start(blocks: ["limit_rate 2m; \(links) \(digest)"]) { root, _ in
            try good.write(to: URL(fileURLWithPath: root + "/file.bin"))
        }
        defer { origin.stop() }
        let url = origin.url(0, "file.bin")
        let (result, _, statuses) = await MirrorEndToEndTests.run(
            MirrorEndToEndTests.job([url], into: dir, segments: 4, retries: 0))
        #expect(throws: Never.self) { try result.get() }
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("file.bin"))) == good)
        #expect(statuses.map(\.url) == [url, first, second], "\(statuses)")
        #expect(statuses.allSatisfy { $0.bytes > 0 && $0.state != .failed && $0.state != .dropped }, "\(statuses)")
        // The mirrors' own logs: each was asked for ranges, and answered them.
        let asked = mirrors.requests()
        #expect(asked.contains { $0.status == 206 } && asked.allSatisfy { $0.status == 206 }, "\(asked)")
    }

    @Test func aDigestHeaderThatDisagreesFailsAsAChecksumMismatch() async throws {
        let good = MirrorEndToEndTests.bytes(seed: 4)
        let wrong = Data(repeating: 7, count: 32).base64EncodedString()
        let origin = try await MirrorNginx.start(blocks: [Self.headers("Digest", ["SHA-256=\(wrong)"])]) { root, _ in
            try good.write(to: URL(fileURLWithPath: root + "/file.bin"))
        }
        defer { origin.stop() }
        let dir = TempDirectory()
        let (result, _, _) = await MirrorEndToEndTests.run(
            MirrorEndToEndTests.job([origin.url(0, "file.bin")], into: dir, segments: 2, retries: 0))
        guard case .failure(let error) = result else {
            Issue.record("the download succeeded despite the Digest header")
            return
        }
        #expect(error.category == .checksum && error.category.exitCode == 9, "\(error)")
        #expect(!error.message.contains("\n"), "\(error.message)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("file.bin")))
    }
}
