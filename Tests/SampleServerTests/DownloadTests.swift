import Foundation
import SampleServer
import TestSupport
import Testing

@Suite("Downloads")
struct DownloadTests {
    @Test func fullGetMatchesTheGeneratedBytes() async throws {
        try await withServer { server in
            let response = try await RawHTTPClient.fetch(from: server, downloadTarget("small.bin"))
            #expect(response.status == 200)
            #expect(response.contentLength == 1 << 20)
            #expect(response.body == file("small.bin").bytes(offset: 0, count: 1 << 20))
            #expect(response["accept-ranges"] == "bytes")
            #expect(response["content-type"] == "application/octet-stream")
            #expect(response["content-disposition"] == "attachment; filename=\"small.bin\"")
            #expect(response["content-range"] == nil)
        }
    }

    @Test func emptyFileIsAnEmptyBody() async throws {
        try await withServer { server in
            let response = try await RawHTTPClient.fetch(from: server, downloadTarget("empty.bin"))
            #expect(response.status == 200)
            #expect(response.contentLength == 0)
            #expect(response.body.isEmpty)
        }
    }

    @Test(arguments: [
        ("bytes=100-199", 100, 199),
        ("bytes=1000000-", 1_000_000, (1 << 20) - 1),
        ("bytes=-4096", (1 << 20) - 4_096, (1 << 20) - 1),
    ])
    func singleRangeIsPartialContent(range: String, first: Int, last: Int) async throws {
        try await withServer { server in
            let response = try await RawHTTPClient.fetch(from: server, downloadTarget("small.bin"), headers: ["Range": range])
            #expect(response.status == 206)
            #expect(response["content-range"] == "bytes \(first)-\(last)/\(1 << 20)")
            #expect(response.contentLength == last - first + 1)
            #expect(response.body == file("small.bin").bytes(offset: first, count: last - first + 1))
        }
    }

    @Test func unsatisfiableRangeIs416() async throws {
        try await withServer { server in
            let response = try await RawHTTPClient.fetch(
                from: server, downloadTarget("tiny.bin"), headers: ["Range": "bytes=1000-"])
            #expect(response.status == 416)
            #expect(response["content-range"] == "bytes */1000")
            #expect(response.body.isEmpty)
        }
    }

    @Test func multiRangeIsIgnored() async throws {
        try await withServer { server in
            let response = try await RawHTTPClient.fetch(
                from: server, downloadTarget("tiny.bin"), headers: ["Range": "bytes=0-1,5-6"])
            #expect(response.status == 200)
            #expect(response.body.count == 1_000)
        }
    }

    @Test func ifRangeWithTheCurrentValidatorsKeepsTheRange() async throws {
        try await withServer { server in
            let head = try await RawHTTPClient.fetch("HEAD", from: server, downloadTarget("tiny.bin"))
            let etag = try #require(head["etag"])
            let lastModified = try #require(head["last-modified"])
            for validator in [etag, lastModified] {
                let response = try await RawHTTPClient.fetch(
                    from: server, downloadTarget("tiny.bin"), headers: ["Range": "bytes=10-19", "If-Range": validator])
                #expect(response.status == 206, "If-Range: \(validator)")
                #expect(response.body == file("tiny.bin").bytes(offset: 10, count: 10))
            }
        }
    }

    @Test func ifRangeWithStaleValidatorsSendsTheWholeFile() async throws {
        try await withServer { server in
            for validator in ["\"stale\"", "Mon, 01 Jan 2001 00:00:00 GMT"] {
                let response = try await RawHTTPClient.fetch(
                    from: server, downloadTarget("tiny.bin"), headers: ["Range": "bytes=10-19", "If-Range": validator])
                #expect(response.status == 200, "If-Range: \(validator)")
                #expect(response.body == file("tiny.bin").bytes(offset: 0, count: 1_000))
            }
        }
    }

    @Test func headSendsTheHeadersOnly() async throws {
        try await withServer { server in
            let head = try await RawHTTPClient.fetch("HEAD", from: server, downloadTarget("small.bin"))
            #expect(head.status == 200)
            #expect(head.contentLength == 1 << 20)
            #expect(head.body.isEmpty)
            #expect(head["accept-ranges"] == "bytes")
            let etag = try #require(head["etag"])
            #expect(etag.hasPrefix("\"") && etag.hasSuffix("\""), "strong ETag")
            #expect(head["last-modified"]?.hasSuffix(" GMT") == true)
            let get = try await RawHTTPClient.fetch(from: server, downloadTarget("small.bin"))
            #expect(get["etag"] == etag)
            #expect(get["last-modified"] == head["last-modified"])
            #expect(server.stats.bodyBytesSent == 1 << 20, "HEAD sent no body")
        }
    }

    @Test func unknownNameIs404() async throws {
        try await withServer { server in
            let unknownGet = try await RawHTTPClient.fetch(from: server, downloadTarget("nope.bin"))
            #expect(unknownGet.status == 404)
            let noName = try await RawHTTPClient.fetch(from: server, "/files/download")
            #expect(noName.status == 404)
            let unknownHead = try await RawHTTPClient.fetch("HEAD", from: server, downloadTarget("nope.bin"))
            #expect(unknownHead.status == 404)
            #expect(unknownHead.body.isEmpty, "HEAD answers never carry a body")
        }
    }

    @Test func statsCountRequestsRangesAndBytes() async throws {
        try await withServer { server in
            _ = try await RawHTTPClient.fetch(from: server, downloadTarget("small.bin"))
            _ = try await RawHTTPClient.fetch(from: server, downloadTarget("tiny.bin"), headers: ["Range": "bytes=0-99"])
            _ = try await RawHTTPClient.fetch("HEAD", from: server, downloadTarget("tiny.bin"))
            #expect(server.stats == SampleServerStats(requests: 3, headRequests: 1, bodyBytesSent: (1 << 20) + 100,
                                                      rangeRequests: 1, bodies: [0..<(1 << 20), 0..<100]))
            // Ranges a client cannot bound: from an offset to the end, and a suffix.
            _ = try await RawHTTPClient.fetch(from: server, downloadTarget("tiny.bin"), headers: ["Range": "bytes=100-"])
            _ = try await RawHTTPClient.fetch(from: server, downloadTarget("tiny.bin"), headers: ["Range": "bytes=-10"])
            #expect(server.stats.rangeRequests == 3)
            #expect(server.stats.openRangeRequests == 2)
            server.resetStats()
            #expect(server.stats == SampleServerStats())
        }
    }

    @Test func manyConcurrentConnections() async throws {
        try await withServer { server in
            let expected = file("small.bin").bytes(offset: 0, count: 1 << 20)
            try await withThrowingTaskGroup(of: RawResponse.self) { group in
                for index in 0..<16 {
                    group.addTask {
                        try await RawHTTPClient.fetch(
                            from: server, downloadTarget("small.bin"), headers: ["Range": "bytes=\(index * 65_536)-"])
                    }
                }
                var count = 0
                for try await response in group {
                    let first = try #require(response["content-range"]?.split(separator: " ")[1].split(separator: "-").first)
                    #expect(response.body[...] == expected[try #require(Int(first))...])
                    count += 1
                }
                #expect(count == 16)
            }
            #expect(server.stats.requests == 16)
        }
    }

    @Test func stopEndsRunningDownloadsAndIsIdempotent() async throws {
        let (started, startedSink) = AsyncStream.makeStream(of: String.self)
        let server = try await SampleServer.start(
            SampleServerConfiguration(port: 0, rate: 64 * 1_024, files: testFiles, jpegs: false, requestLog: { startedSink.yield($0) }))
        async let download = RawHTTPClient.fetch(from: server, downloadTarget("medium.bin"))
        for await line in started where line.hasPrefix("GET medium.bin") { break }
        await server.stop()
        let response = try await download
        #expect(response.status == 200)
        #expect(response.body.count < 20 << 20, "cut short by stop(): the whole body would take 320 s")
        await server.stop()
    }
}
