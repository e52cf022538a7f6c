import NIOConcurrencyHelpers

/// Who fetches which bytes of a segmented download. Shared by the segment workers; every method is
/// atomic under one lock.
///
/// Work starts as the byte ranges still missing from the file. A worker claims a range, fetches it,
/// and asks `end(of:)` after each batch, because its end can move: when a worker runs out of work it
/// steals the back half of the largest range still being fetched (work stealing), so one slow
/// connection never holds the tail of the download alone.
///
/// In order (`--sequential`), the file is fetched front to back so that it can be used while it arrives:
/// the missing bytes are cut into chunks (`inOrderChunk`) handed out lowest first, and a worker with
/// nothing to claim, or whose next chunk lies too far ahead of the contiguous prefix (`lookahead`), takes
/// the back half of the front-most range still being fetched: the prefix then waits on no slow connection.
final class SegmentPlan: Sendable {
    /// Ranges smaller than this are not split again.
    let minimumSplit: Int64
    /// In order: how far past the front-most byte still being fetched a worker may begin a chunk before it
    /// helps with the front instead; nil when the plan is not in order.
    let lookahead: Int64?

    private struct Active {
        var next: Int64
        var end: Int64
    }

    private struct State {
        var unassigned: [ByteRange]
        var active: [Int: Active] = [:]
        /// A worker's own next range, before anything unassigned (worker 0's after its first).
        var reserved: [Int: ByteRange] = [:]
        /// Workers sent home: they get nothing more until recalled.
        var retired: Set<Int> = []
        /// Retired workers waiting to be recalled (true) or let go (false).
        var parked: [Int: CheckedContinuation<Bool, Never>] = [:]
        /// Workers whose connection failed (`giveBack`): they claim nothing more.
        var failed: Set<Int> = []
        /// Of those, the ones that have not left yet.
        var failedPresent = 0
        /// Workers with nothing left to claim while others still fetch, waiting in case one of those fails
        /// and gives its rest back (true) or until nobody fetches any more (false).
        var idle: [Int: CheckedContinuation<Bool, Never>] = [:]
        /// Retired workers recalled before they came to wait: their wait returns at once.
        var recalled: Set<Int> = []
        /// Workers that have not left (`left`): when the last one leaves, the parked ones are let go.
        var present: Int
        /// Every worker has left, or was let go: nobody is recalled any more.
        var over = false
    }

    private let state: NIOLockedValueBox<State>

    /// Files smaller than two of these are fetched over one connection.
    static let defaultMinimumSplit: Int64 = 1 << 20

    /// - Parameters:
    ///   - parts: the missing ranges are halved (largest first) until there are this many, so each
    ///     connection starts with a range of its own and stealing is left for the tail.
    ///   - held: a range worker 0 is fetching already (the probe). It counts as part of worker 0's piece, and
    ///     the rest of that piece is worker 0's next range, so all the connections end about together.
    ///   - inOrder: front to back (`--sequential`): chunks lowest first, steals from the front.
    init(missing: [ByteRange], parts: Int = 1, held: ByteRange? = nil,
         minimumSplit: Int64 = SegmentPlan.defaultMinimumSplit, inOrder: Bool = false) {
        self.minimumSplit = minimumSplit
        let chunk = Self.inOrderChunk(minimumSplit: minimumSplit)
        // Twice the chunks the connections hold at once: a connection slower than the others is helped
        // once the rest have run a round ahead of it, not at the first sign of it.
        lookahead = inOrder ? chunk * Int64(2 * Swift.max(parts, 1)) : nil
        if inOrder {
            var state = State(unassigned: [], present: parts)
            if let held { state.active[0] = Active(next: held.start, end: held.end) }
            state.unassigned = ByteRange.merged(missing)
                .flatMap { ByteRange.subtract(held.map { [$0] } ?? [], from: $0) }
                .flatMap { Self.cut($0, into: chunk) }
                .sorted { $0.start > $1.start }
            self.state = NIOLockedValueBox(state)
            return
        }
        var pieces = ByteRange.merged(missing + (held.map { [$0] } ?? [])).filter { $0.count > 0 }
        while pieces.count < parts, let largest = pieces.indices.max(by: { pieces[$0].count < pieces[$1].count }),
            pieces[largest].count >= 2 * minimumSplit
        {
            let range = pieces[largest]
            let middle = range.start + range.count / 2
            pieces[largest] = ByteRange(range.start, middle)
            pieces.append(ByteRange(middle, range.end))
        }
        var state = State(unassigned: [], present: parts)
        if let held {
            state.active[0] = Active(next: held.start, end: held.end)
            if let own = pieces.firstIndex(where: { $0.start <= held.start && held.start < $0.end }),
                pieces[own].end > held.end
            {
                state.reserved[0] = ByteRange(held.end, pieces[own].end)
            }
            pieces = pieces.flatMap { ByteRange.subtract([held], from: $0) }
                .filter { $0.start != state.reserved[0]?.start }
        }
        state.unassigned = pieces.sorted { $0.start > $1.start }
        self.state = NIOLockedValueBox(state)
    }

    /// The size of the chunks an in-order plan hands out: a few times what is worth a request of its own,
    /// so that a stalled chunk at the front can still be halved twice.
    static func inOrderChunk(minimumSplit: Int64) -> Int64 {
        4 * minimumSplit
    }

    /// `range` in consecutive pieces of `size` bytes (the last one shorter).
    private static func cut(_ range: ByteRange, into size: Int64) -> [ByteRange] {
        stride(from: range.start, to: range.end, by: Int(size)).map { ByteRange($0, Swift.min($0 + size, range.end)) }
    }

    /// The range `worker` will claim next if nobody takes it first: its own, not begun yet (nil when it has
    /// none left). Claims nothing.
    func reservedRange(of worker: Int) -> ByteRange? {
        state.withLockedValue { state in state.retired.contains(worker) ? nil : state.reserved[worker] }
    }

    /// Gives `worker` its next range: a missing one, else the back half of the largest active one. In order:
    /// the lowest missing one, unless it lies more than `lookahead` past the front-most byte being fetched,
    /// and else the back half of the front-most active range that can be split.
    func claim(for worker: Int) -> ByteRange? {
        state.withLockedValue { state in
            state.active[worker] = nil
            guard !state.retired.contains(worker), !state.failed.contains(worker) else { return nil }
            if let lookahead { return Self.claimInOrder(for: worker, &state, lookahead: lookahead, minimumSplit: minimumSplit) }
            // Its own range first, then a missing one, then another's not yet begun (that one may have failed).
            if let range = state.reserved.removeValue(forKey: worker) ?? state.unassigned.popLast()
                ?? state.reserved.keys.min().flatMap({ state.reserved.removeValue(forKey: $0) })
            {
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

    /// Under the lock: `claim` in order (see there).
    private static func claimInOrder(for worker: Int, _ state: inout State, lookahead: Int64,
                                     minimumSplit: Int64) -> ByteRange? {
        let front = state.active.values.map(\.next).min()
        // The front-most range still being fetched with enough left to halve; on a tie, the lowest worker.
        let helped = state.active.filter { $0.value.end - $0.value.next >= 2 * minimumSplit }
            .min { a, b in a.value.next != b.value.next ? a.value.next < b.value.next : a.key < b.key }
        // Helping the front pays only when the front lags: the next chunk is too far ahead of it, and the range
        // helped lies before that chunk.
        if let next = state.unassigned.last,
            front.map({ next.start - $0 <= lookahead }) ?? true || (helped.map { $0.value.next >= next.start } ?? true)
        {
            state.unassigned.removeLast()
            state.active[worker] = Active(next: next.start, end: next.end)
            return next
        }
        guard let (victim, range) = helped else { return nil }
        let middle = range.next + (range.end - range.next) / 2
        state.active[victim]?.end = middle
        state.active[worker] = Active(next: middle, end: range.end)
        return ByteRange(middle, range.end)
    }

    /// Sends every worker but `kept` home: each stops at the byte it has reached (its next batch is cut
    /// there), and what it had left, with any range reserved for it, goes back to be claimed.
    func retire(allBut kept: Int, of workers: Int) {
        state.withLockedValue { state in
            state.retired.formUnion((0..<workers).filter { $0 != kept })
            for (worker, active) in state.active where worker != kept {
                if active.end > active.next { state.unassigned.append(ByteRange(active.next, active.end)) }
                state.active[worker]?.end = active.next
            }
            for (worker, range) in state.reserved where worker != kept {
                state.unassigned.append(range)
                state.reserved[worker] = nil
            }
            state.unassigned.sort { $0.start > $1.start }
        }
    }

    /// Whether `worker` was sent home (and not recalled since): for tests.
    func isRetired(_ worker: Int) -> Bool {
        state.withLockedValue { $0.retired.contains(worker) }
    }

    /// A worker with nothing left to claim asks here. Retired, it waits holding no connection: true once
    /// `recall` brings it back (or brought it back before it came), false when the download no longer needs
    /// it (every worker that kept on has left) or its task is cancelled. Never retired, it waits while
    /// another worker still fetches, in case that one fails and gives its rest back (`giveBack`): true then
    /// (or at once if there is work to claim), false when nobody fetches any more.
    func waitForWork(_ worker: Int) async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let (answer, letGo) = state.withLockedValue { state -> (Bool?, [CheckedContinuation<Bool, Never>]) in
                    if state.over || Task.isCancelled || state.failed.contains(worker) { return (false, []) }
                    if state.recalled.remove(worker) != nil { return (true, []) }
                    if state.retired.contains(worker) {
                        state.parked[worker] = continuation
                    } else {
                        if !state.unassigned.isEmpty || !state.reserved.isEmpty { return (true, []) }
                        if !state.active.keys.contains(where: { $0 != worker }) { return (false, []) }
                        state.idle[worker] = continuation
                    }
                    return (nil, Self.letGoIfNobodyFetches(&state))
                }
                if let answer { continuation.resume(returning: answer) }
                for waiter in letGo { waiter.resume(returning: false) }
            }
        } onCancel: {
            let waiter = state.withLockedValue { $0.parked.removeValue(forKey: worker) ?? $0.idle.removeValue(forKey: worker) }
            waiter?.resume(returning: false)
        }
    }

    /// `worker`'s connection failed (a refused request, a dropped connection) with its current range written up
    /// to `written`: the rest of that range, and any range reserved for it, go back to be claimed by the
    /// others, and it claims nothing more. Workers waiting for work are woken to claim it; when nobody
    /// else is fetching, the retired ones are recalled. Returns how many workers are left to fetch (present,
    /// and not failed).
    @discardableResult
    func giveBack(_ worker: Int, writtenUpTo written: Int64) -> Int {
        let (woken, left) = state.withLockedValue { state -> ([CheckedContinuation<Bool, Never>], Int) in
            if state.failed.insert(worker).inserted { state.failedPresent += 1 }
            state.retired.remove(worker)
            if let active = state.active.removeValue(forKey: worker), written < active.end {
                state.unassigned.append(ByteRange(Swift.max(written, 0), active.end))
            }
            if let range = state.reserved.removeValue(forKey: worker) { state.unassigned.append(range) }
            state.unassigned.sort { $0.start > $1.start }
            var woken = Array(state.idle.values)
            state.idle = [:]
            if woken.isEmpty, state.active.isEmpty, !state.over { woken = Self.recallRetired(&state) }
            return (woken, state.present - state.failedPresent)
        }
        for waiter in woken { waiter.resume(returning: true) }
        return left
    }

    /// `worker`'s source failed or was dropped, and it goes on from another (a download from several
    /// sources): the rest of its current range (written up to `written`), and any range reserved for it, go
    /// back to be claimed, by it too. Workers waiting for work are woken to claim it.
    func handBack(_ worker: Int, writtenUpTo written: Int64) {
        let woken = state.withLockedValue { state -> [CheckedContinuation<Bool, Never>] in
            if let active = state.active.removeValue(forKey: worker), written < active.end {
                state.unassigned.append(ByteRange(Swift.max(written, 0), active.end))
            }
            if let range = state.reserved.removeValue(forKey: worker) { state.unassigned.append(range) }
            state.unassigned.sort { $0.start > $1.start }
            defer { state.idle = [:] }
            return Array(state.idle.values)
        }
        for waiter in woken { waiter.resume(returning: true) }
    }

    /// The sources of `workers` were dropped: each stops at the byte it has reached (its next batch is cut
    /// there) and the rest of its range goes back to be claimed.
    func cut(_ workers: [Int]) {
        state.withLockedValue { state in
            for worker in workers {
                guard let active = state.active[worker] else { continue }
                if active.end > active.next { state.unassigned.append(ByteRange(active.next, active.end)) }
                state.active[worker]?.end = active.next
            }
            state.unassigned.sort { $0.start > $1.start }
        }
    }

    /// `ranges`, fetched already, are missing again (a dropped source's bytes, not kept): they go back to be
    /// claimed, and the workers waiting for work are woken. Returns false when every worker has left (the
    /// caller fetches them in another round).
    @discardableResult
    func reopen(_ ranges: [ByteRange]) -> Bool {
        let (woken, open) = state.withLockedValue { state -> ([CheckedContinuation<Bool, Never>], Bool) in
            guard !state.over else { return ([], false) }
            state.unassigned += ranges.filter { $0.count > 0 }
            state.unassigned.sort { $0.start > $1.start }
            defer { state.idle = [:] }
            return (Array(state.idle.values), true)
        }
        for waiter in woken { waiter.resume(returning: true) }
        return open
    }

    /// Brings the retired workers back (a connection that went on alone turned out to be limited after all):
    /// they claim ranges again, the unfetched ones first, then halves of the largest. Returns how many come
    /// back: those waiting, and those still on their way to wait (none when the download is over).
    @discardableResult
    func recall() -> Int {
        let (waiters, onTheirWay) = state.withLockedValue { state -> ([CheckedContinuation<Bool, Never>], Int) in
            guard !state.over else { return ([], 0) }
            let waiters = Self.recallRetired(&state)
            return (waiters, state.recalled.count)
        }
        for waiter in waiters { waiter.resume(returning: true) }
        return waiters.count + onTheirWay
    }

    /// Under the lock: the retired workers come back, those not waiting yet marked `recalled`; returns the
    /// waiting ones, for the caller to resume with true.
    private static func recallRetired(_ state: inout State) -> [CheckedContinuation<Bool, Never>] {
        state.recalled = state.retired.subtracting(state.parked.keys)
        state.retired = []
        defer { state.parked = [:] }
        return Array(state.parked.values)
    }

    /// `worker` has stopped for good (nothing left, or it failed). When no worker that could still fetch is
    /// left, the parked ones are let go.
    func left(_ worker: Int) {
        let waiters = state.withLockedValue { state -> [CheckedContinuation<Bool, Never>] in
            state.present -= 1
            if state.failed.contains(worker) { state.failedPresent -= 1 }
            return Self.letGoIfNobodyFetches(&state)
        }
        for waiter in waiters { waiter.resume(returning: false) }
    }

    /// When every worker still present waits (retired or idle), none will fetch again: the download is over
    /// for them.
    private static func letGoIfNobodyFetches(_ state: inout State) -> [CheckedContinuation<Bool, Never>] {
        guard !state.over, state.present <= state.parked.count + state.idle.count else { return [] }
        state.over = true
        defer {
            state.parked = [:]
            state.idle = [:]
        }
        return Array(state.parked.values) + Array(state.idle.values)
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
