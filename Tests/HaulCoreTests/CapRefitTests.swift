import NIOConcurrencyHelpers
import SampleServer
import TestSupport
import Testing
@testable import HaulCore

/// A running transfer keeps the receive buffer it started with (libcurl must not be given another mid-transfer),
/// so a cap that drops far below it was kept in chunks of the whole buffer: 256 KiB at a time, a minute apart
/// at 4 KiB/s. Where the rest can be asked for from where the bytes stopped, the engine now ends the transfer
/// and the download asks for the rest with a buffer fitted to the cap, neither a failure nor a retry.
@Suite struct CapRefitTests {
    @Test func aBufferNoLongerFitsWhenAChunkTakesOverFourSecondsOrSmallOnesComeOverAThousandASecond() {
        let largest = 256 << 10
        // Started uncapped (the largest buffer): a chunk takes up to four seconds at 64 KiB/s, more below.
        #expect(!ReceivePacer.isMisfit(buffer: largest, rate: 256 << 10, largest: largest))
        #expect(!ReceivePacer.isMisfit(buffer: largest, rate: 64 << 10, largest: largest))
        #expect(ReceivePacer.isMisfit(buffer: largest, rate: 63 << 10, largest: largest))
        #expect(ReceivePacer.isMisfit(buffer: largest, rate: 4 << 10, largest: largest))
        // Started at 16 KiB/s (2 KiB chunks): lifted, it wants the largest again; raised to 1 MiB/s (500 chunks
        // a second) it keeps them, and above 2,000 KiB/s it is refitted.
        #expect(ReceivePacer.isMisfit(buffer: 2 << 10, rate: 0, largest: largest))
        #expect(!ReceivePacer.isMisfit(buffer: 2 << 10, rate: 8 << 10, largest: largest))
        #expect(!ReceivePacer.isMisfit(buffer: 2 << 10, rate: 1 << 20, largest: largest))
        #expect(!ReceivePacer.isMisfit(buffer: 2 << 10, rate: 2000 << 10, largest: largest))
        #expect(ReceivePacer.isMisfit(buffer: 2 << 10, rate: 2001 << 10, largest: largest))
        #expect(!ReceivePacer.isMisfit(buffer: largest, rate: 0, largest: largest))
    }

    /// Through curl against a fast local server: a transfer its reader marked ends with `HaulError.refit` once
    /// its cap drops to 16 KiB/s, after the bytes it had.
    @Test func aMarkedTransferWhoseCapDropsFarBelowItsBufferEndsToBeRefitted() async throws {
        let limit = ReceiveLimit()
        try await withSampleServer { server in
            let transfer = ReceiveLimit.$current.withValue(limit) {
                CurlDriver.shared.start(HTTPRequest(url: server.downloadURL("medium.bin")))
            }
            transfer.refitsToCap = true
            let ended = try await within(60, "the transfer to end for its new cap") { () async throws -> HaulError? in
                var received = 0
                do {
                    for try await batch in transfer.bytes {
                        if received == 0 {
                            limit.set(16 << 10)
                            CurlDriver.shared.limitsChanged()
                        }
                        received += batch.count
                    }
                } catch let error as HaulError {
                    #expect(received > 0 && received < 20 << 20, "\(received) bytes")
                    return error
                }
                return nil
            }
            #expect(ended?.isRefit == true, "\(String(describing: ended))")
        }
    }

    /// A whole download, over one connection and over four: the cap drops to 16 KiB/s (where medium.bin
    /// would take 21 minutes) and is lifted once a transfer was ended to be refitted. Nothing failed, nothing
    /// was retried, the rest came by Range requests (never the file again from its start), and it is whole.
    @Test(arguments: [1, 4])
    func aDownloadWhoseCapDropsAsksForTheRestWithAFittedBuffer(segments: Int) async throws {
        let dir = TempDirectory()
        let events = TransferEvents()
        var downloader = Downloader(driver: events.driver())
        downloader.retryPolicy.base = .milliseconds(10)
        try await withSampleServer { server in
            let limit = ReceiveLimit()
            let job = DownloadJob.sample(server, "medium.bin", dir, segments: segments)
            let (result, facts) = try await within(60, "the download once a transfer is refitted") { [downloader] in
                let steps = CapSteps(limit, events: events) { events.count(where: { $0 == .refitted }) > 0 }
                return await ReceiveLimit.$current.withValue(limit) {
                    await downloader.runCollectingFacts(job, onProgress: steps.progressed)
                }
            }
            #expect(try result.get().path == dir.file("medium.bin"))
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
            #expect(!facts.contains { $0.retry != nil }, "\(facts)")
            #expect(events.count(where: { $0 == .refitted }) > 0)
            // (What the server had queued on an ended connection is sent again: on loopback megabytes, which
            // the socket buffers held.)
            #expect(server.stats.rangeRequests > (segments > 1 ? segments : 0), "\(server.stats)")
            #expect(server.stats.bodies.filter { $0.lowerBound == 0 }.count == 1, "\(server.stats)")
        }
    }

    /// A server that names no version of the file: a request for the rest could splice two versions, so the
    /// transfer keeps its connection (and its pace) when the cap drops, and no byte is fetched twice.
    @Test func withoutValidatorsTheTransferKeepsItsConnection() async throws {
        let dir = TempDirectory()
        let events = TransferEvents()
        let downloader = Downloader(driver: events.driver())
        try await withSampleServer { server in
            var faults = SampleServerFaults()
            faults.omitValidators = true
            server.setFaults(faults)
            let limit = ReceiveLimit()
            let job = DownloadJob.sample(server, "medium.bin", dir)
            let (result, facts) = try await within(60, "the download after its cap is lifted") { [downloader] in
                // Lifted once the transfer has the cap of 16 KiB/s (and would have been refitted already).
                let steps = CapSteps(limit, events: events) {
                    events.count(where: { $0 == .capped(bytesPerSecond: 16 << 10) }) > 0
                }
                return await ReceiveLimit.$current.withValue(limit) {
                    await downloader.runCollectingFacts(job, onProgress: steps.progressed)
                }
            }
            #expect(try result.get().bytes == 20 << 20)
            #expect(facts.isEmpty, "\(facts)")
            #expect(events.count(where: { $0 == .capped(bytesPerSecond: 16 << 10) }) == 1)
            #expect(events.count(where: { $0 == .refitted }) == 0)
            #expect(server.stats.bodies.count == 1 && server.stats.bodyBytesSent == 20 << 20, "\(server.stats)")
        }
    }
}

/// A download's cap, dropped to 16 KiB/s (a 256 KiB chunk every 16 s) once 2 MiB are in, and lifted once
/// `liftWhen` holds; driven by the download's progress events.
private final class CapSteps: Sendable {
    private let limit: ReceiveLimit
    private let events: TransferEvents
    private let liftWhen: @Sendable () -> Bool
    private let step = NIOLockedValueBox(0)

    init(_ limit: ReceiveLimit, events: TransferEvents, liftWhen: @escaping @Sendable () -> Bool) {
        self.limit = limit
        self.events = events
        self.liftWhen = liftWhen
    }

    func progressed(_ progress: DownloadProgress) {
        step.withLockedValue { step in
            if step == 0, progress.completed >= 2 << 20 {
                step = 1
                limit.set(16 << 10)
                events.driverLimitsChanged()
            } else if step == 1, liftWhen() {
                step = 2
                limit.set(nil)
                events.driverLimitsChanged()
            }
        }
    }
}
