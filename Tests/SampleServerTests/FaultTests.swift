import Foundation
import SampleServer
import TestSupport
import Testing

@Suite("Faults and throttling")
struct FaultTests {
    @Test func dropCutsTheBodyShortOfContentLength() async throws {
        try await withServer { server in
            var faults = SampleServerFaults()
            faults.dropAfterBytes = 100_000
            faults.dropLimit = 1
            server.setFaults(faults)
            let dropped = try await RawHTTPClient.fetch(from: server, downloadTarget("small.bin"))
            #expect(dropped.status == 200)
            #expect(dropped.contentLength == 1 << 20)
            #expect(dropped.body == file("small.bin").bytes(offset: 0, count: 100_000))
            let next = try await RawHTTPClient.fetch(from: server, downloadTarget("small.bin"))
            #expect(next.body.count == 1 << 20, "only dropLimit responses are dropped")
        }
    }

    @Test func dropCountsFromTheStartOfARange() async throws {
        try await withServer { server in
            var faults = SampleServerFaults()
            faults.dropAfterBytes = 5_000
            server.setFaults(faults)
            let response = try await RawHTTPClient.fetch(
                from: server, downloadTarget("small.bin"), headers: ["Range": "bytes=500000-"])
            #expect(response.status == 206)
            #expect(response.body == file("small.bin").bytes(offset: 500_000, count: 5_000))
            let short = try await RawHTTPClient.fetch(
                from: server, downloadTarget("small.bin"), headers: ["Range": "bytes=0-99"])
            #expect(short.body.count == 100, "a body shorter than dropAfterBytes is sent whole")
        }
    }

    @Test func unavailableAnswers503ThenServes() async throws {
        try await withServer { server in
            var faults = SampleServerFaults()
            faults.unavailableCount = 2
            faults.retryAfterSeconds = 7
            server.setFaults(faults)
            // A HEAD meets the fault without using it up: the first two GETs still get the 503s.
            let first = try await RawHTTPClient.fetch("HEAD", from: server, downloadTarget("tiny.bin"))
            let second = try await RawHTTPClient.fetch(from: server, downloadTarget("tiny.bin"))
            let third = try await RawHTTPClient.fetch(from: server, downloadTarget("tiny.bin"))
            let fourth = try await RawHTTPClient.fetch(from: server, downloadTarget("tiny.bin"))
            let afterwards = try await RawHTTPClient.fetch("HEAD", from: server, downloadTarget("tiny.bin"))
            #expect(first.status == 503)
            #expect(first["retry-after"] == "7")
            #expect(first.body.isEmpty, "HEAD answers never carry a body")
            #expect(second.status == 503)
            #expect(third.status == 503)
            #expect(fourth.status == 200)
            #expect(fourth.body.count == 1_000)
            #expect(afterwards.status == 200)
        }
    }

    @Test func faultsCanTargetOneFile() async throws {
        try await withServer { server in
            var faults = SampleServerFaults()
            faults.unavailableCount = 1
            faults.only = "small.bin"
            server.setFaults(faults)
            let otherFile = try await RawHTTPClient.fetch(from: server, downloadTarget("tiny.bin"))
            #expect(otherFile.status == 200)
            let targetFile = try await RawHTTPClient.fetch(from: server, downloadTarget("small.bin"))
            #expect(targetFile.status == 503)
            #expect(server.faults == faults)
        }
    }

    @Test func ignoreRangeSendsTheWholeFile() async throws {
        try await withServer { server in
            var faults = SampleServerFaults()
            faults.ignoreRange = true
            server.setFaults(faults)
            let response = try await RawHTTPClient.fetch(
                from: server, downloadTarget("tiny.bin"), headers: ["Range": "bytes=10-19"])
            #expect(response.status == 200)
            #expect(response["content-range"] == nil)
            #expect(response.body == file("tiny.bin").bytes(offset: 0, count: 1_000))
        }
    }

    @Test func etagSaltLooksLikeAChangedFile() async throws {
        try await withServer { server in
            let before = try await RawHTTPClient.fetch("HEAD", from: server, downloadTarget("tiny.bin"))
            var faults = SampleServerFaults()
            faults.etagSalt = "edited"
            server.setFaults(faults)
            let after = try await RawHTTPClient.fetch("HEAD", from: server, downloadTarget("tiny.bin"))
            #expect(after["etag"] != nil)
            #expect(after["etag"] != before["etag"])
            #expect(after["last-modified"] != before["last-modified"])
            let resumed = try await RawHTTPClient.fetch(
                from: server, downloadTarget("tiny.bin"),
                headers: ["Range": "bytes=10-", "If-Range": try #require(before["etag"])])
            #expect(resumed.status == 200, "the old ETag no longer matches")
        }
    }

    @Test func contentDispositionIsSentVerbatim() async throws {
        try await withServer { server in
            var faults = SampleServerFaults()
            faults.contentDisposition = "attachment; filename=\"../../evil.sh\""
            server.setFaults(faults)
            let head = try await RawHTTPClient.fetch("HEAD", from: server, downloadTarget("tiny.bin"))
            #expect(head["content-disposition"] == "attachment; filename=\"../../evil.sh\"")
        }
    }

    @Test func stallPausesTheBody() async throws {
        try await withServer { server in
            var faults = SampleServerFaults()
            faults.stallSeconds = 0.3
            faults.stallAfterBytes = 500
            server.setFaults(faults)
            let stalled = try await RawHTTPClient.fetch(from: server, downloadTarget("tiny.bin"))
            // On the wall clock: the server's stall is a real pause (it serves real clients); a lower bound,
            // which load cannot break.
            #expect(stalled.elapsed >= .milliseconds(300))
            #expect(stalled.body == file("tiny.bin").bytes(offset: 0, count: 1_000), "then continues")
        }
    }

    @Test func holdStopsTheBodyUntilReleased() async throws {
        try await withServer { server in
            var faults = SampleServerFaults()
            faults.holdAt = [300, 700]
            server.setFaults(faults)
            async let response = RawHTTPClient.fetch(from: server, downloadTarget("tiny.bin"))
            await server.waitUntilHeld(1)
            #expect(server.stats.bodyBytesSent == 300)
            server.release()
            await server.waitUntilHeld(2)
            #expect(server.stats.bodyBytesSent == 700)
            server.release()
            #expect(try await response.body == file("tiny.bin").bytes(offset: 0, count: 1_000))
            // A range that starts past an offset does not hold there; the counters start over with new faults.
            server.setFaults(faults)
            let tail = try await RawHTTPClient.fetch(
                from: server, downloadTarget("tiny.bin"), headers: ["Range": "bytes=800-"])
            #expect(tail.body == file("tiny.bin").bytes(offset: 800, count: 200))
        }
    }

    /// A limit on the bodies sent at once (nginx's `limit_conn`): a GET beyond it gets a 503 with no
    /// `Retry-After`, a HEAD does not count, and a body that ended frees its place.
    @Test func bodiesAtOnceRefusesTheOnesBeyondTheLimit() async throws {
        try await withServer { server in
            var faults = SampleServerFaults()
            faults.bodiesAtOnce = 1
            faults.holdAt = [300]
            server.setFaults(faults)
            async let held = RawHTTPClient.fetch(from: server, downloadTarget("tiny.bin"))
            await server.waitUntilHeld(1)
            let refused = try await RawHTTPClient.fetch(
                from: server, downloadTarget("tiny.bin"), headers: ["Range": "bytes=500-"])
            #expect(refused.status == 503)
            #expect(refused["retry-after"] == nil)
            let head = try await RawHTTPClient.fetch("HEAD", from: server, downloadTarget("tiny.bin"))
            #expect(head.status == 200)
            server.release()
            #expect(try await held.body == file("tiny.bin").bytes(offset: 0, count: 1_000))
            await server.waitUntilNoBodies()
            let after = try await RawHTTPClient.fetch(
                from: server, downloadTarget("tiny.bin"), headers: ["Range": "bytes=500-"])
            #expect(after.status == 206)
            #expect(after.body == file("tiny.bin").bytes(offset: 500, count: 500))
        }
    }

    @Test func rateThrottlesEachResponse() async throws {
        let config = SampleServerConfiguration(port: 0, rate: 512 * 1_024, files: testFiles, jpegs: false)
        try await withServer(config) { server in
            let response = try await RawHTTPClient.fetch(
                from: server, downloadTarget("small.bin"), headers: ["Range": "bytes=0-262143"])
            #expect(response.body.count == 256 * 1_024)
            // The server says it paced the body; on the wall clock, a lower bound load cannot break (the
            // throttle paces real sockets, and 256 KiB at 512 KiB/s with a 1/20 s burst takes at least 0.45 s).
            let paced = server.stats.throttleWaits
            #expect(paced > 0)
            #expect(response.elapsed >= .milliseconds(400))
            server.setRate(nil)
            #expect(server.rate == nil)
            let fast = try await RawHTTPClient.fetch(from: server, downloadTarget("small.bin"))
            #expect(fast.body.count == 1 << 20)
            #expect(server.stats.throttleWaits == paced, "with the throttle off, no chunk waits")
        }
    }

    @Test func faultsDoNotAffectListing() async throws {
        try await withServer { server in
            var faults = SampleServerFaults()
            faults.unavailableCount = 5
            server.setFaults(faults)
            let listing = try await RawHTTPClient.fetch(from: server, "/files/list")
            #expect(listing.status == 200)
            #expect(server.stats.requests == 0)
        }
    }
}
