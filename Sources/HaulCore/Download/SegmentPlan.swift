import NIOConcurrencyHelpers

/// Who fetches which bytes of a segmented download. Shared by the segment workers; every method is
/// atomic under one lock.
///
/// Work starts as the byte ranges still missing from the file. A worker claims a range, fetches it,
/// and asks `end(of:)` after each batch, because its end can move: when a worker runs out of work it
/// steals the back half of the largest range still being fetched (work stealing), so one slow
/// connection never holds the tail of the download alone.
final class SegmentPlan: Sendable {
    /// Ranges smaller than this are not split again.
    let minimumSplit: Int64

    private struct Active {
        var next: Int64
        var end: Int64
    }

    private struct State {
        var unassigned: [ByteRange]
        var active: [Int: Active] = [:]
    }

    private let state: NIOLockedValueBox<State>

    /// Files smaller than two of these are fetched over one connection.
    static let defaultMinimumSplit: Int64 = 1 << 20

    /// - Parameter parts: the missing ranges are halved (largest first) until there are this many, so
    ///   each connection starts with a range of its own and stealing is left for the tail.
    init(missing: [ByteRange], parts: Int = 1, minimumSplit: Int64 = SegmentPlan.defaultMinimumSplit) {
        self.minimumSplit = minimumSplit
        var pieces = missing.filter { $0.count > 0 }
        while pieces.count < parts, let largest = pieces.indices.max(by: { pieces[$0].count < pieces[$1].count }),
            pieces[largest].count >= 2 * minimumSplit
        {
            let range = pieces[largest]
            let middle = range.start + range.count / 2
            pieces[largest] = ByteRange(range.start, middle)
            pieces.append(ByteRange(middle, range.end))
        }
        state = NIOLockedValueBox(State(unassigned: pieces.sorted { $0.start > $1.start }))
    }

    /// Gives `worker` its next range: a missing one, else the back half of the largest active one.
    func claim(for worker: Int) -> ByteRange? {
        state.withLockedValue { state in
            state.active[worker] = nil
            if let range = state.unassigned.popLast() {
                state.active[worker] = Active(next: range.start, end: range.end)
                return range
            }
            // The most bytes left; on a tie, the lowest worker (so the choice is reproducible).
            guard let (victim, largest) = state.active.max(by: { a, b in
                    let (left, right) = (a.value.end - a.value.next, b.value.end - b.value.next)
                    return left != right ? left < right : a.key > b.key
                }),
                largest.end - largest.next >= 2 * minimumSplit
            else { return nil }
            let middle = largest.next + (largest.end - largest.next) / 2
            state.active[victim]?.end = middle
            state.active[worker] = Active(next: middle, end: largest.end)
            return ByteRange(middle, largest.end)
        }
    }

    /// Records that `worker` has the bytes up to `offset`; returns where it must stop now.
    func advance(_ worker: Int, to offset: Int64) -> Int64 {
        state.withLockedValue { state in
            state.active[worker]?.next = offset
            return state.active[worker]?.end ?? offset
        }
    }

    func end(of worker: Int) -> Int64? {
        state.withLockedValue { $0.active[worker]?.end }
    }
}

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

/// Holds back the extra connections of a segmented download until they are wanted: `open()` lets the
/// waiting workers go, `close()` sends them home (the download is done, or failed). Cancellation of a
/// waiting worker's task counts as closed.
final class SplitGate: Sendable {
    private enum Phase {
        case waiting([UInt64: CheckedContinuation<Bool, Never>])
        case open
        case closed
    }

    private let state: NIOLockedValueBox<(phase: Phase, nextWaiter: UInt64)>

    init(open: Bool) {
        state = NIOLockedValueBox((open ? .open : .waiting([:]), 0))
    }

    var isOpen: Bool {
        state.withLockedValue { if case .open = $0.phase { true } else { false } }
    }

    /// Lets the waiting workers (and any later one) go; true if this call opened it.
    @discardableResult
    func open() -> Bool {
        settle(.open)
    }

    /// Sends waiting workers (and any later one) home, unless already open.
    func close() {
        _ = settle(.closed)
    }

    private func settle(_ outcome: Phase) -> Bool {
        let waiters = state.withLockedValue { state -> [CheckedContinuation<Bool, Never>]? in
            guard case .waiting(let waiters) = state.phase else { return nil }
            state.phase = outcome
            return Array(waiters.values)
        }
        let go = { if case .open = outcome { true } else { false } }()
        for waiter in waiters ?? [] { waiter.resume(returning: go) }
        return waiters != nil
    }

    /// True when the worker may start, false when it is not needed.
    func wait() async -> Bool {
        let id = state.withLockedValue { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now = state.withLockedValue { state -> Bool? in
                    switch state.phase {
                    case .open: return true
                    case .closed: return false
                    case .waiting(var waiters):
                        if Task.isCancelled { return false }
                        waiters[id] = continuation
                        state.phase = .waiting(waiters)
                        return nil
                    }
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLockedValue { state -> CheckedContinuation<Bool, Never>? in
                guard case .waiting(var waiters) = state.phase, let waiter = waiters.removeValue(forKey: id) else {
                    return nil
                }
                state.phase = .waiting(waiters)
                return waiter
            }
            waiter?.resume(returning: false)
        }
    }
}
