/// A transfer's byte batches cut off where a segment plan says the worker must stop.
struct SegmentBytes: AsyncSequence {
    typealias Element = ByteBatch
    let base: TransferBytes
    let plan: SegmentPlan
    let worker: Int
    let start: Int64

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: TransferBytes.AsyncIterator
        let plan: SegmentPlan
        let worker: Int
        var offset: Int64

        mutating func next() async throws -> ByteBatch? {
            guard let end = plan.end(of: worker), offset < end, let batch = try await base.next() else { return nil }
            let limit = plan.advance(worker, to: offset)
            let usable = Int(Swift.min(Int64(batch.count), Swift.max(0, limit - offset)))
            guard usable > 0 else { return nil }
            offset += Int64(usable)
            _ = plan.advance(worker, to: offset)
            return batch.prefix(usable)
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), plan: plan, worker: worker, offset: start)
    }
}
