import Foundation
import NIOConcurrencyHelpers
import SampleServer
import TestSupport
import Testing

/// `/sign/NAME` and `/signed/NAME?expires=T&n=N&sig=HEX`: links that expire on the server's clock.
@Suite("Signed links")
struct SignedLinkTests {
    @Test func aLinkServesTheFileUntilItExpiresOrIsForged() async throws {
        let now = NIOLockedValueBox<Int64>(5_000)
        var configuration = SampleServerConfiguration(port: 0, files: testFiles, jpegs: false)
        configuration.now = { now.withLockedValue { $0 } }
        configuration.signedLinkLifetime = 30
        try await withServer(configuration) { server in
            let signed = try await RawHTTPClient.fetch(from: server, "/sign/small.bin")
            #expect(signed.status == 200)
            let link = String(decoding: signed.body, as: UTF8.self).trimmingCharacters(in: .newlines)
            #expect(link.hasPrefix("http://127.0.0.1:\(server.port)/signed/small.bin?expires=5030&n=1&sig="), "\(link)")
            let target = String(link.dropFirst("http://127.0.0.1:\(server.port)".count))

            let ranged = try await RawHTTPClient.fetch(from: server, target, headers: ["Range": "bytes=100-199"])
            #expect(ranged.status == 206)
            #expect(ranged.body == file("small.bin").bytes(offset: 100, count: 100))
            let plain = try await RawHTTPClient.fetch(from: server, downloadTarget("small.bin"))
            #expect(ranged["etag"] == plain["etag"], "the same file, whatever the address")

            // Each link is its own: the next one has another number and signature.
            let next = try await RawHTTPClient.fetch(from: server, "/sign/small.bin")
            #expect(String(decoding: next.body, as: UTF8.self).contains("&n=2&sig="))

            let forged = target.replacingOccurrences(of: "expires=5030", with: "expires=9030")
            let refused = try await RawHTTPClient.fetch(from: server, forged)
            #expect(refused.status == 403)
            now.withLockedValue { $0 = 5_030 }
            let last = try await RawHTTPClient.fetch(from: server, target)
            #expect(last.status == 200, "good through its last second")
            now.withLockedValue { $0 = 5_031 }
            let expired = try await RawHTTPClient.fetch(from: server, target)
            #expect(expired.status == 403 && expired.body == Array("link expired\n".utf8))
            let direct = server.signedPath("small.bin", expires: 6_000)
            let head = try await RawHTTPClient.fetch("HEAD", from: server, direct)
            #expect(head.status == 200)
        }
    }

    @Test func aLinkOfLimitedUsesIsUsedUp() async throws {
        var configuration = SampleServerConfiguration(port: 0, files: testFiles, jpegs: false)
        configuration.signedLinkUses = 2
        try await withServer(configuration) { server in
            let target = server.signedPath("tiny.bin", expires: Int64.max / 2)
            var statuses: [Int] = []
            for _ in 0..<3 { statuses.append(try await RawHTTPClient.fetch(from: server, target).status) }
            #expect(statuses == [200, 200, 403])
        }
    }
}
