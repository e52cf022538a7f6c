import SampleServer
import TestSupport
import Testing
@testable import HaulCore

@Suite struct TransportTests {
    @Test func aFileArrivesByteIdenticalWithItsHead() async throws {
        let events = TransferEvents()
        let driver = events.driver()
        try await withSampleServer { server in
            let transfer = driver.start(HTTPRequest(url: server.downloadURL("small.bin")))
            let head = try await transfer.head()
            #expect(head.status == 200)
            #expect(head.contentLength == 1 << 20)
            #expect(head["Accept-Ranges"] == "bytes")
            var received: [UInt8] = []
            for try await batch in transfer.bytes { received += batch }
            #expect(received == expectedBytes("small.bin"))
            await events.waitUntilClosed(transfer)
            #expect(transfer.statistics.closed)
        }
        await driver.shutdown()
    }

    /// curl writes a cookie jar when it frees the handle: that must happen before the consumer hears the end,
    /// or a process that exits right after its last download leaves no jar (a CI flake, once).
    @Test func theCookieJarIsWrittenBeforeTheBodyEnds() async throws {
        var configuration = SampleServerConfiguration(port: 0, jpegs: false)
        configuration.cookie = "session=abc123"
        let dir = TempDirectory()
        try await withSampleServer(configuration) { server in
            for round in 0..<20 {
                let jar = dir.file("jar\(round).txt")
                var request = HTTPRequest(url: server.downloadURL("small.bin"))
                request.headers = ["Cookie: session=abc123"]
                request.options.cookieJar = jar
                let transfer = CurlDriver.shared.start(request)
                #expect(try await transfer.head().status == 200)
                for try await _ in transfer.bytes {}
                let saved = try String(contentsOfFile: jar, encoding: .utf8)
                #expect(saved.contains("sample-visits"), "\(saved)")
            }
        }
    }

    @Test func aRangeRequestGetsThePartialContent() async throws {
        try await withSampleServer { server in
            var request = HTTPRequest(url: server.downloadURL("small.bin"))
            request.range = (1000, 1999)
            let transfer = CurlDriver.shared.start(request)
            let head = try await transfer.head()
            #expect(head.status == 206)
            #expect(head.contentRange?.first == 1000)
            var received: [UInt8] = []
            for try await batch in transfer.bytes { received += batch }
            #expect(received == Array(expectedBytes("small.bin")[1000...1999]))
        }
    }

    @Test func aSlowConsumerPausesTheTransferAndMemoryStaysBounded() async throws {
        let events = TransferEvents()
        let driver = events.driver(highWatermark: 1 << 20)
        try await withSampleServer { server in
            let transfer = driver.start(HTTPRequest(url: server.downloadURL("medium.bin")))
            // Read nothing until curl has had to pause twice: once before the first read, once after.
            try await within(10, "the first pause") { await events.waitUntilPaused(transfer, moreThan: 0) }
            var iterator = transfer.bytes.makeAsyncIterator()
            var received = Array(try await iterator.next() ?? [])
            try await within(10, "the second pause") { await events.waitUntilPaused(transfer, moreThan: 1) }
            while let batch = try await iterator.next() { received += batch }

            let statistics = transfer.statistics
            #expect(statistics.pauses >= 2)
            // The high watermark plus at most one curl buffer (256 KiB) ever waits in memory.
            #expect(statistics.peakBufferedBytes <= (1 << 20) + 256 * 1024)
            #expect(received.count == 20 << 20)
            #expect(received == expectedBytes("medium.bin"))
        }
        await driver.shutdown()
    }

    @Test func cancellingTheReaderStopsTheTransferAndFreesItsHandle() async throws {
        let events = TransferEvents()
        let driver = events.driver()
        try await withSampleServer(rate: 1 << 20) { server in
            let transfer = driver.start(HTTPRequest(url: server.downloadURL("medium.bin")))
            #expect(transfer.statistics.closedAt == nil)
            let reader = Task {
                var count = 0
                for try await batch in transfer.bytes { count += batch.count }
                return count
            }
            _ = try await transfer.head()
            reader.cancel()
            await events.waitUntilClosed(transfer)
            await #expect(throws: CancellationError.self) { try await reader.value }
            #expect(transfer.statistics.closed)
        }
        await driver.shutdown()
    }

    @Test func aRefusedConnectionIsANetworkError() async throws {
        let transfer = CurlDriver.shared.start(HTTPRequest(url: "http://127.0.0.1:1/x"))
        let error = await #expect(throws: HaulError.self) { try await transfer.head() }
        #expect(error?.category == .network)
    }

    @Test func aShortBodyIsANetworkErrorNotAnEnd() async throws {
        try await withSampleServer { server in
            var faults = SampleServerFaults()
            faults.dropAfterBytes = 100_000
            server.setFaults(faults)
            let transfer = CurlDriver.shared.start(HTTPRequest(url: server.downloadURL("small.bin")))
            var count = 0
            let error = await #expect(throws: HaulError.self) {
                for try await batch in transfer.bytes { count += batch.count }
            }
            #expect(error?.category == .network)
            #expect(count == 100_000)
        }
    }

    @Test func aStallTripsTheTimeout() async throws {
        try await withSampleServer { server in
            var faults = SampleServerFaults()
            faults.stallSeconds = 5
            faults.stallAfterBytes = 1000
            server.setFaults(faults)
            var request = HTTPRequest(url: server.downloadURL("small.bin"))
            request.options.stallTimeout = 1
            let transfer = CurlDriver.shared.start(request)
            let error = await #expect(throws: HaulError.self) {
                for try await _ in transfer.bytes {}
            }
            #expect(error?.category == .network)
            // The typed reason, beside the words (FailureReasonTests has the other sources).
            #expect(error?.reason == .stalled)
            #expect(error?.message == "no data received for 1 s (stalled)")
        }
    }

    @Test func aKeptBatchIsNeverOverwrittenAndADroppedOneIsReused() async throws {
        try await withSampleServer { server in
            // Kept: every batch stays intact while later ones arrive (their buffers are not recycled).
            let kept = CurlDriver.shared.start(HTTPRequest(url: server.downloadURL("medium.bin")))
            var batches: [ByteBatch] = []
            for try await batch in kept.bytes { batches.append(batch) }
            #expect(batches.count > 2)
            #expect(batches.flatMap { $0 } == expectedBytes("medium.bin"))
            #expect(kept.statistics.buffersAllocated == batches.count)

            // Dropped: a few buffers in rotation carry the whole file.
            let dropped = CurlDriver.shared.start(HTTPRequest(url: server.downloadURL("medium.bin")))
            var count = 0
            let digest = OpenSSLDigest(.sha256)
            for try await batch in dropped.bytes {
                count += 1
                batch.withUnsafeBytes { digest.update($0) }
            }
            #expect(digest.hex() == OpenSSLDigest.hex(.sha256, of: expectedBytes("medium.bin")))
            // Two in steady state, and now and then one more: a returned buffer is refilled only once nothing
            // refers to it, and the reader's loop may still hold it for a moment.
            #expect(count > 8)
            #expect(dropped.statistics.buffersAllocated <= Swift.max(3, count / 4))
        }
    }
}

@Suite struct OpenAheadTests {
    /// Segments that start while the HEADs opened for them are still unanswered wait for those connections
    /// instead of opening their own: `-s 4` uses four connections, however slow the HEADs.
    @Test func segmentsWaitForTheConnectionsOpenedForThem() async throws {
        let server = try HeldHeadServer(size: 4 << 20)
        defer { server.stop() }
        let events = TransferEvents()
        // Patience longer than any test: a run so slow that the segments gave up waiting would open 7.
        let driver = events.driver(aheadPatience: .seconds(3600))
        var probe = HTTPRequest(url: server.url)
        probe.ownConnection = true
        // The whole file: more than the driver buffers, so the probe holds its connection until it is read.
        probe.range = (0, (4 << 20) - 1)
        // No stall timeout: the held HEADs (which take the probe's options) must not give up while the test
        // takes its time, nor must the paused probe.
        probe.options.stallTimeout = 0
        let first = driver.start(probe, clock: ContinuousClock(), openingAhead: 3)
        #expect(try await first.head().status == 206)
        #expect(await server.waitForHeads(3), "the three HEADs arrived")
        var segments: [Transfer] = []
        for index in 1..<4 {
            var request = probe
            request.range = (Int64(index) << 20, (Int64(index + 1) << 20) - 1)
            segments.append(driver.start(request))
        }
        // The driver takes commands in order: once a transfer started after them has failed (nothing listens on
        // port 1), it has dealt with the three.
        let barrier = driver.start(HTTPRequest(url: "http://127.0.0.1:1/"))
        _ = try? await barrier.head()
        for segment in segments {
            #expect(events.seen(segment).contains(.waitsForAConnectionOpenedAhead), "\(events.seen(segment))")
        }
        server.releaseHeads()
        var received = 0
        for transfer in [first] + segments {
            for try await batch in transfer.bytes { received += batch.count }
        }
        #expect(received == (4 << 20) + (3 << 20))
        #expect(server.accepted == 4, "the probe's connection and the three opened ahead")
        await driver.shutdown()
    }
}

extension OpenAheadTests {
    /// A probe and the connections opened beside it go to the curl thread together: however soon the probe
    /// ends (a server that sends it in one go), no HEAD finds its connection idle and rides it, so `-s 4` has
    /// its four connections from the start. Posted one after the other, a probe could end in between, and then
    /// one connection carried the probe and the HEADs in turn (a third of `-s 4` runs on loopback).
    @Test func connectionsOpenedWithAProbeAreTheirOwnHoweverSoonItEnds() async throws {
        let server = try HeldHeadServer(size: 64 << 10)
        defer { server.stop() }
        server.releaseHeads()
        let driver = TransferEvents().driver()
        var probe = HTTPRequest(url: server.url)
        probe.ownConnection = true
        probe.range = (0, (64 << 10) - 1)
        let first = driver.start(probe, clock: ContinuousClock(), openingAhead: 3)
        var received = 0
        for try await batch in first.bytes { received += batch.count }
        #expect(received == 64 << 10)
        #expect(await server.waitForHeads(3), "the three HEADs arrived")
        let requests = server.requests
        let connections = server.requestConnections
        #expect(server.accepted == 4, "the probe's connection and three of their own: \(requests)")
        let probeConnection = connections[requests.firstIndex { $0.hasPrefix("GET ") } ?? 0]
        let headConnections = zip(requests, connections).filter { $0.0.hasPrefix("HEAD ") }.map(\.1)
        #expect(Set(headConnections).count == 3 && !headConnections.contains(probeConnection),
                "HEADs on connections \(headConnections), the probe on \(probeConnection)")
        await driver.shutdown()
    }
}

/// What decides whether two requests can share a connection: scheme, host and port (case aside), and the
/// proxy; never the path, the query or the fragment.
@Suite struct OriginTests {
    @Test func anOriginIsTheSchemeAuthorityAndProxy() {
        #expect(CurlDriver.origin(of: "https://Example.COM:8443/a/b?q=1#f", proxy: nil) == "https://example.com:8443 ")
        #expect(CurlDriver.origin(of: "http://host", proxy: nil) == "http://host ")
        #expect(CurlDriver.origin(of: "http://host?x=/y", proxy: nil) == "http://host ")
        #expect(CurlDriver.origin(of: "http://host#frag", proxy: nil) == "http://host ")
        #expect(CurlDriver.origin(of: "http://user@host:80/p", proxy: "socks5h://127.0.0.1:9")
                == "http://user@host:80 socks5h://127.0.0.1:9")
        // The first "://" ends the scheme; a later one is part of the path.
        #expect(CurlDriver.origin(of: "HTTP://A/b://c", proxy: nil) == "http://a ")
        // No scheme: up to the first delimiter.
        #expect(CurlDriver.origin(of: "host:8080/p", proxy: nil) == "host:8080 ")
        #expect(CurlDriver.origin(of: "", proxy: nil) == " ")
        // Non-ASCII hosts keep their characters.
        #expect(CurlDriver.origin(of: "https://bücher.example/x", proxy: nil) == "https://bücher.example ")
        #expect(CurlDriver.origin(of: "https://BÜCHER.Example/x", proxy: "http://Proxy:3128")
                == "https://bücher.example http://Proxy:3128")
        #expect(CurlDriver.origin(of: "https://Example.COM/x", proxy: "http://prøxy:3128")
                == "https://example.com http://prøxy:3128")
    }
}

/// `CurlDriver.start(_:clock:after:)`: a transfer the curl thread starts itself the moment another ends (a
/// `-s N` download's first connection asks for the rest of its piece as its probe's last byte comes in, not
/// once the probe's reader has written it).
@Suite struct FollowingTransferTests {
    /// A request for the whole file, on a connection of its own, larger than the driver holds for a reader
    /// that does not read: the transfer stays running until the test reads it.
    private static func whole(_ server: HeldHeadServer) -> HTTPRequest {
        var request = HTTPRequest(url: server.url)
        request.ownConnection = true
        request.range = (0, Int64(server.size) - 1)
        request.options.stallTimeout = 0
        return request
    }

    private static func range(_ server: HeldHeadServer, _ first: Int64, _ last: Int64) -> HTTPRequest {
        var request = whole(server)
        request.range = (first, last)
        return request
    }

    /// Once the driver has taken every command posted before this: a transfer started after them has failed
    /// (nothing listens on port 1).
    private static func barrier(_ driver: CurlDriver) async {
        _ = try? await driver.start(HTTPRequest(url: "http://127.0.0.1:1/")).head()
    }

    @Test func itAsksOnlyOnceTheOneBeforeHasEndedAndOnItsConnection() async throws {
        let server = try HeldHeadServer(size: 4 << 20)
        defer { server.stop() }
        let events = TransferEvents()
        let driver = events.driver()
        let first = driver.start(Self.whole(server), clock: ContinuousClock())
        #expect(try await first.head().status == 206)
        let next = driver.start(Self.range(server, 1 << 20, (2 << 20) - 1), clock: ContinuousClock(), after: first)
        await Self.barrier(driver)
        #expect(events.seen(next).contains(.waitsForTheTransferBefore), "\(events.seen(next))")
        #expect(server.requests.count == 1, "only the first asked so far: \(server.requests)")
        var received = 0
        for try await batch in first.bytes { received += batch.count }
        #expect(received == 4 << 20)
        #expect(try await next.head().status == 206)
        var followed = 0
        for try await batch in next.bytes { followed += batch.count }
        #expect(followed == 1 << 20)
        #expect(server.requests.count == 2)
        #expect(server.accepted == 1, "the second asked on the first's connection: \(server.requestConnections)")
        await driver.shutdown()
    }

    @Test func oneCancelledBeforeItsTurnNeverAsks() async throws {
        let server = try HeldHeadServer(size: 4 << 20)
        defer { server.stop() }
        let driver = TransferEvents().driver()
        let first = driver.start(Self.whole(server), clock: ContinuousClock())
        #expect(try await first.head().status == 206)
        let next = driver.start(Self.range(server, 0, 1023), clock: ContinuousClock(), after: first)
        next.cancel()
        await #expect(throws: (any Error).self) { _ = try await next.head() }
        for try await _ in first.bytes {}
        await Self.barrier(driver)
        #expect(server.requests.count == 1, "\(server.requests)")
        await driver.shutdown()
    }

    /// When the one before fails (here: cancelled while its answer is held), the follower ends unstarted, as
    /// cancelled, and never asks: its reader asks again if it still wants the bytes.
    @Test func oneAfterAFailedTransferEndsUnstarted() async throws {
        let server = try HeldHeadServer(size: 1 << 20)
        defer { server.stop() }
        let driver = TransferEvents().driver()
        var held = Self.whole(server)
        held.method = .head
        let first = driver.start(held, clock: ContinuousClock())
        #expect(await server.waitForHeads(1))
        let next = driver.start(Self.range(server, 0, 1023), clock: ContinuousClock(), after: first)
        await Self.barrier(driver)
        first.cancel()
        do {
            _ = try await next.head()
            Issue.record("the follower of a cancelled transfer started")
        } catch let error as HaulError {
            #expect(error.category == .cancelled, "\(error.message)")
        }
        server.releaseHeads()
        await Self.barrier(driver)
        #expect(server.requests.filter { $0.hasPrefix("GET ") }.isEmpty, "\(server.requests)")
        await driver.shutdown()
    }

    /// One started after a transfer that has ended already starts at once.
    @Test func oneAfterAnEndedTransferStartsAtOnce() async throws {
        let server = try HeldHeadServer(size: 64 << 10)
        defer { server.stop() }
        let events = TransferEvents()
        let driver = events.driver()
        let first = driver.start(Self.whole(server), clock: ContinuousClock())
        for try await _ in first.bytes {}
        let next = driver.start(Self.range(server, 0, 1023), clock: ContinuousClock(), after: first)
        #expect(try await next.head().status == 206)
        #expect(!events.seen(next).contains(.waitsForTheTransferBefore))
        await driver.shutdown()
    }
}
