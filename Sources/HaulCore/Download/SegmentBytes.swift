/// A transfer's byte batches cut off where a segment plan says the worker must stop.
///
/// A source's first range may begin `overlap` bytes before the segment (bytes another source fetches): those
/// are not the segment's, and go to `compare` in one piece, to be checked against what the other source wrote
/// there, before the first byte of the segment is handed on.
struct SegmentBytes: AsyncSequence {
    typealias Element = ByteBatch
    let base: TransferBytes
    let plan: SegmentPlan
    let worker: Int
    let start: Int64
    var overlap = 0
    var compare: (@Sendable ([UInt8]) -> Void)? = nil

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: TransferBytes.AsyncIterator
        let plan: SegmentPlan
        let worker: Int
        var offset: Int64
        /// Overlap bytes still to take before the segment's first.
        var skip: Int
        var captured: [UInt8] = []
        let compare: (@Sendable ([UInt8]) -> Void)?

        mutating func next() async throws -> ByteBatch? {
            guard let end = plan.end(of: worker), offset < end, var batch = try await base.next() else { return nil }
            if skip > 0 {
                guard let rest = try await takeOverlap(batch) else { return nil }
                batch = rest
            }
            let limit = plan.advance(worker, to: offset)
            let usable = Int(Swift.min(Int64(batch.count), Swift.max(0, limit - offset)))
            guard usable > 0 else { return nil }
            offset += Int64(usable)
            _ = plan.advance(worker, to: offset)
            return batch.prefix(usable)
        }

        /// Takes the overlap from `batch` and the batches after it; returns the first of the segment's bytes
        /// (nil: the stream ended first).
        private mutating func takeOverlap(_ batch: ByteBatch) async throws -> ByteBatch? {
            var batch = batch
            while true {
                let taken = Swift.min(skip, batch.count)
                batch.prefix(taken).withUnsafeBytes { captured.append(contentsOf: $0) }
                skip -= taken
                if skip == 0 {
                    compare?(captured)
                    captured = []
                    let rest = batch.dropFirst(taken)
                    if !rest.isEmpty { return rest }
                    return try await base.next()
                }
                guard let next = try await base.next() else { return nil }
                batch = next
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), plan: plan, worker: worker, offset: start, skip: overlap,
                      compare: compare)
    }
}
