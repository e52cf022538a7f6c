import NIOConcurrencyHelpers

/// The mutable side of a running server: faults, rate and statistics, shared by the request handlers and the
/// public ``SampleServer`` API under one lock.
final class ServerController: Sendable {
    private struct State {
        var faults = SampleServerFaults()
        var unavailableAnswered = 0
        var responsesDropped = 0
        /// Bodies admitted under ``SampleServerFaults/bodiesAtOnce`` and not yet ended.
        var bodiesAdmitted = 0
        var stats = SampleServerStats()
        var rate: Int?
        /// Waiting for every body under way to end.
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        /// How often ``release()`` was called since the faults were set.
        var releases = 0
        /// Bodies held at a ``SampleServerFaults/holdAt`` offset, by key: the releases each needs.
        var holds: [Int: (needed: Int, continuation: CheckedContinuation<Void, Never>)] = [:]
        var nextHold = 0
        /// Waiting for a body to be held until the release they name.
        var heldWaiters: [(needed: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state: NIOLockedValueBox<State>
    /// Chunks per second of a throttled body.
    let chunksPerSecond: Int

    init(rate: Int?, chunksPerSecond: Int = 20) {
        state = NIOLockedValueBox(State(rate: rate))
        self.chunksPerSecond = chunksPerSecond
    }

    var faults: SampleServerFaults {
        state.withLockedValue { $0.faults }
    }

    func setFaults(_ faults: SampleServerFaults) {
        state.withLockedValue {
            $0.faults = faults
            $0.unavailableAnswered = 0
            $0.responsesDropped = 0
            $0.releases = 0
        }
    }

    /// Lets every body held at the next ``SampleServerFaults/holdAt`` offset go on.
    func release() {
        let ready = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.releases += 1
            let keys = state.holds.filter { $0.value.needed <= state.releases }.map(\.key)
            return keys.compactMap { state.holds.removeValue(forKey: $0)?.continuation }
        }
        for continuation in ready { continuation.resume() }
    }

    /// Returns once a body is held waiting for release number `needed` (1 for the first offset).
    func waitUntilHeld(needing needed: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let held = state.withLockedValue { state -> Bool in
                if state.holds.values.contains(where: { $0.needed == needed }) { return true }
                state.heldWaiters.append((needed, continuation))
                return false
            }
            if held { continuation.resume() }
        }
    }

    /// Returns once ``release()`` has been called `needed` times since the faults were set, or the task is
    /// cancelled (the client went away).
    func waitForRelease(_ needed: Int) async {
        let key = state.withLockedValue { state -> Int in
            defer { state.nextHold += 1 }
            return state.nextHold
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let (go, watchers) = state.withLockedValue { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                    if state.releases >= needed || Task.isCancelled { return (true, []) }
                    state.holds[key] = (needed, continuation)
                    let watchers = state.heldWaiters.filter { $0.needed == needed }.map(\.continuation)
                    state.heldWaiters.removeAll { $0.needed == needed }
                    return (false, watchers)
                }
                if go { continuation.resume() }
                for watcher in watchers { watcher.resume() }
            }
        } onCancel: {
            state.withLockedValue { $0.holds.removeValue(forKey: key) }?.continuation.resume()
        }
    }

    var rate: Int? {
        state.withLockedValue { $0.rate }
    }

    func setRate(_ rate: Int?) {
        state.withLockedValue { $0.rate = rate }
    }

    var stats: SampleServerStats {
        state.withLockedValue { $0.stats }
    }

    func resetStats() {
        // The bodies under way are not history.
        state.withLockedValue { $0.stats = SampleServerStats(bodiesStreaming: $0.stats.bodiesStreaming) }
    }

    /// Counts a download request and returns the faults and rate that govern it.
    func admit(name: String, range: String?, head: Bool) -> (faults: SampleServerFaults, rate: Int?) {
        state.withLockedValue {
            $0.stats.requests += 1
            if head { $0.stats.headRequests += 1 }
            if let range {
                $0.stats.rangeRequests += 1
                let spec = range.drop { $0 != "=" }.dropFirst().filter { $0 != " " }
                if spec.hasPrefix("-") || spec.hasSuffix("-") { $0.stats.openRangeRequests += 1 }
            }
            return ($0.faults.applies(to: name) ? $0.faults : SampleServerFaults(), $0.rate)
        }
    }

    /// Whether this request must get a 503: a GET that is one of the first `unavailableCount` for `name`, or a
    /// HEAD while those last (it gets what a GET would, without using one up: a client that opens connections
    /// ahead with HEAD requests meets the same fault as one that does not).
    func claimUnavailable(name: String, head: Bool) -> Bool {
        state.withLockedValue {
            guard $0.faults.applies(to: name), $0.unavailableAnswered < $0.faults.unavailableCount else { return false }
            if !head { $0.unavailableAnswered += 1 }
            return true
        }
    }

    /// Whether a GET may have a body now under ``SampleServerFaults/bodiesAtOnce`` = `limit` (the request's
    /// faults, as `admit` gave them); an admitted body is counted until `releaseBody()`.
    func admitBody(limit: Int) -> Bool {
        state.withLockedValue {
            guard $0.bodiesAdmitted < limit else { return false }
            $0.bodiesAdmitted += 1
            return true
        }
    }

    /// An admitted body has ended (sent, cut, or its client gone).
    func releaseBody() {
        state.withLockedValue { $0.bodiesAdmitted -= 1 }
    }

    /// The byte count after which this response must be cut off, or `nil` to send it whole.
    func claimDrop(name: String, bodyLength: Int) -> Int? {
        state.withLockedValue {
            guard $0.faults.applies(to: name), let dropAfter = $0.faults.dropAfterBytes, dropAfter < bodyLength,
                $0.responsesDropped < $0.faults.dropLimit ?? .max
            else { return nil }
            $0.responsesDropped += 1
            return Swift.max(0, dropAfter)
        }
    }

    /// A GET's body is to carry `bytes` of its file.
    func recordBody(_ bytes: Range<Int>) {
        state.withLockedValue { $0.stats.bodies.append(bytes) }
    }

    func recordBodyBytes(_ count: Int) {
        state.withLockedValue { $0.stats.bodyBytesSent += count }
    }

    func recordThrottleWait() {
        state.withLockedValue { $0.stats.throttleWaits += 1 }
    }

    func bodyStarted() {
        state.withLockedValue { $0.stats.bodiesStreaming += 1 }
    }

    func bodyEnded() {
        let waiters = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.stats.bodiesStreaming -= 1
            guard state.stats.bodiesStreaming == 0 else { return [] }
            defer { state.idleWaiters = [] }
            return state.idleWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once no response body is being streamed.
    func waitUntilNoBodies() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLockedValue { state -> Bool in
                if state.stats.bodiesStreaming == 0 { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }
}
