import SampleServer
import TestSupport
import Testing
@testable import HaulCore

/// A receive cap keeps the bytes flowing at the cap, never a burst and then a silence (which the stall
/// timeout took for a dead server).
@Suite struct ReceivePacerTests {
    static func at(_ seconds: Double) -> TransferInstant {
        TransferInstant(nanoseconds: Int64(seconds * 1e9))
    }

    /// Chunks offered as fast as curl can read them, each retried at the instant the pacer names: what is
    /// taken by any instant never runs ahead of the rate by more than a chunk and the saved tenth of a second.
    @Test(arguments: [(rate: Int64(50_000), chunk: 6_250), (rate: 1 << 20, chunk: 128 << 10), (rate: 3, chunk: 1024)])
    func aFastSourceIsTakenAtTheRate(rate: Int64, chunk: Int) {
        var pacer = ReceivePacer(rate: rate, now: Self.at(0))
        var now = Self.at(0)
        var taken: Int64 = 0
        var chunks = 0
        while chunks < 400 {
            switch pacer.admit(chunk, at: now) {
            case .take:
                taken += Int64(chunk)
                chunks += 1
                let elapsed = Double(now.nanoseconds) / 1e9
                #expect(Double(taken) <= Double(rate) * elapsed + Double(chunk) + Double(rate) / 10 + 1,
                        "\(taken) bytes by \(elapsed) s")
            case .wait(let until):
                #expect(until > now)
                now = until
            }
        }
        // And no slower than the rate either: the last chunk came when the debt before it was paid.
        let elapsed = Double(now.nanoseconds) / 1e9
        #expect(Double(taken - Int64(chunk)) / elapsed <= Double(rate) * 1.001)
        #expect(Double(taken - Int64(chunk)) / elapsed >= Double(rate) * 0.999)
    }

    @Test func idleTimeSavesATenthOfASecondAtMost() {
        var pacer = ReceivePacer(rate: 100_000, now: Self.at(0))
        #expect(pacer.admit(1000, at: Self.at(0)) == .take)
        // An hour with nothing, then a burst: 10,000 bytes of credit, so 11 chunks of 1000 and then a wait.
        var taken = 0
        while pacer.admit(1000, at: Self.at(3600)) == .take { taken += 1 }
        #expect(taken == 11)
    }

    @Test func aNewRateSetsTheWait() {
        var pacer = ReceivePacer(rate: 1000, now: Self.at(0))
        #expect(pacer.admit(10_000, at: Self.at(0)) == .take)
        #expect(pacer.admit(1, at: Self.at(1)) == .wait(until: TransferInstant(nanoseconds: 10_000_000_001)))
        pacer.setRate(9000, now: Self.at(1))  // 9000 owed at 9000/s: paid at 2 s
        #expect(pacer.paidOff(from: Self.at(1)) == TransferInstant(nanoseconds: 2_000_000_001))
        #expect(pacer.admit(1, at: Self.at(2.001)) == .take)
    }

    @Test func curlsBufferIsAnEighthOfASecondWithinItsBounds() {
        #expect(ReceivePacer.chunkSize(rate: 50 << 10, largest: 256 << 10) == 6400)
        #expect(ReceivePacer.chunkSize(rate: 100, largest: 256 << 10) == 1024)
        #expect(ReceivePacer.chunkSize(rate: 1 << 30, largest: 256 << 10) == 256 << 10)
    }

    /// Through curl against a fast local server: libcurl's own cap (before) handed over the whole megabyte at
    /// once at 256 KiB/s and then read nothing for four seconds. Only an upper bound on the bytes by each
    /// instant: a busy machine makes the transfer slower, never faster.
    @Test func aCappedTransferNeverRunsAheadOfItsRate() async throws {
        let rate: Int64 = 256 << 10
        try await withSampleServer { server in
            var request = HTTPRequest(url: server.downloadURL("small.bin"))
            request.options.maxReceiveRate = rate
            let clock = ContinuousClock()
            let start = clock.now
            let transfer = CurlDriver.shared.start(request)
            var received = 0
            for try await batch in transfer.bytes {
                received += batch.count
                let elapsed = start.duration(to: clock.now)
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                // One curl buffer (an eighth of a second) and a tenth of a second saved, over the rate.
                let allowed = Double(rate) * (seconds + 0.125 + 0.1) + 1
                #expect(Double(received) <= allowed, "\(received) bytes after \(seconds) s at \(rate) B/s")
            }
            #expect(received == 1 << 20)
        }
    }

    /// A capped transfer held by its pace goes on at once when the cap is lifted while it runs.
    @Test func liftingTheCapReleasesAHeldTransfer() async throws {
        let limit = ReceiveLimit(16 << 10)  // medium.bin would take 21 minutes
        try await withSampleServer { server in
            let transfer = ReceiveLimit.$current.withValue(limit) {
                CurlDriver.shared.start(HTTPRequest(url: server.downloadURL("medium.bin")))
            }
            let received = try await within(60, "the whole file once the cap is lifted") {
                var received = 0
                for try await batch in transfer.bytes {
                    if received == 0 {
                        limit.set(nil)
                        CurlDriver.shared.limitsChanged()
                    }
                    received += batch.count
                }
                return received
            }
            #expect(received == 20 << 20)
        }
    }
}
