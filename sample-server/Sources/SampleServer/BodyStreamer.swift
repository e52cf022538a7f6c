import Hummingbird
import NIOCore

/// What one download response body sends: which bytes, how fast, and which faults interrupt it.
struct BodyPlan: Sendable {
    let file: ServedFile
    let range: Range<Int>
    /// Bytes per second, or `nil` for as fast as the client reads.
    let rate: Int?
    /// Pause once, for `duration`, when `after` body bytes have been sent.
    let stall: (after: Int, duration: Duration)?
    /// Cut the connection once this many body bytes have been sent.
    let dropAfter: Int?
    /// Wait, when `after` body bytes have been sent, until the server was released `releases` times; in order.
    let holds: [(after: Int, releases: Int)]
}

/// Streams a ``BodyPlan`` in chunks generated or read on the fly, so no file is ever held whole in memory.
struct BodyStreamer: Sendable {
    static let maximumChunk = 256 * 1_024

    let plan: BodyPlan
    let controller: ServerController
    let channel: any Channel
    let log: RequestLog
    /// Counted by ``SampleServerFaults/bodiesAtOnce``: released when the body ends.
    var admitted = false

    func responseBody() -> ResponseBody {
        ResponseBody(contentLength: plan.range.count) { writer in
            controller.bodyStarted()
            defer {
                // Its place first: whoever waits for no bodies may then ask for one.
                if admitted { controller.releaseBody() }
                controller.bodyEnded()
            }
            try await stream(to: &writer)
        }
    }

    private func stream(to writer: inout any ResponseBodyWriter) async throws {
        let reader = try ContentReader(plan.file.content)
        let total = plan.range.count
        let chunkLimit = plan.rate.map {
            TokenBucket.chunkSize(forRate: $0, maximum: Self.maximumChunk, perSecond: controller.chunksPerSecond)
        }
            ?? Self.maximumChunk
        var bucket = plan.rate.map { TokenBucket(rate: $0, capacity: TokenBucket.capacity(forRate: $0, chunk: chunkLimit)) }
        var stall = plan.stall.flatMap { $0.after < total ? $0 : nil }
        var holds = plan.holds[...]
        let clock = ContinuousClock()
        let start = clock.now
        var sent = 0
        while sent < total {
            try Task.checkCancellation()
            if let pending = stall, pending.after == sent {
                log.write("stall \(plan.file.name) for \(pending.duration) after \(sent) bytes")
                try await Task.sleep(for: pending.duration)
                stall = nil
            }
            while let hold = holds.first, hold.after == sent {
                log.write("hold \(plan.file.name) after \(sent) bytes")
                await controller.waitForRelease(hold.releases)
                holds = holds.dropFirst()
                try Task.checkCancellation()
            }
            if plan.dropAfter == sent {
                try await dropConnection(after: sent)
            }
            var count = Swift.min(chunkLimit, total - sent)
            if let stall {
                count = Swift.min(count, stall.after - sent)
            }
            if let dropAfter = plan.dropAfter {
                count = Swift.min(count, dropAfter - sent)
            }
            if let hold = holds.first {
                count = Swift.min(count, hold.after - sent)
            }
            if let wait = bucket?.reserve(count, at: (clock.now - start).seconds), wait > 0 {
                controller.recordThrottleWait()
                try await Task.sleep(for: .seconds(wait))
            }
            let chunk = try reader.read(offset: plan.range.lowerBound + sent, count: count)
            try await writer.write(chunk)
            sent += count
            controller.recordBodyBytes(count)
        }
        try await writer.finish(nil)
    }

    /// Ends the response the way a network failure would: the bytes written so far are flushed, then the connection
    /// closes short of the declared `Content-Length`.
    private func dropConnection(after sent: Int) async throws -> Never {
        log.write("drop \(plan.file.name) after \(sent) of \(plan.range.count) bytes")
        let channel = self.channel
        try? await withTaskCancellationHandler {
            try await channel.close(mode: .output)
        } onCancel: {
            channel.close(promise: nil)
        }
        throw ConnectionDropped()
    }
}

/// Thrown inside a response body to make Hummingbird close the connection.
struct ConnectionDropped: Error {}

extension Duration {
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}
