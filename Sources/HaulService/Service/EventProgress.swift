import NIOConcurrencyHelpers

/// How far the service's event pipeline has got: the manager's events it has applied to the roster and
/// written to the store, counted in order. A command waits here, before its answer, until every event the
/// manager made up to then is handled (`DownloadManager.eventsYielded`): a client told "paused" finds it
/// paused in `ls`, and a `kill -9` right after the answer cannot take the change back.
final class EventProgress: Sendable {
    private let state = NIOLockedValueBox((handled: 0, waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)]()))

    /// `count` more events handled, in order.
    func advance(by count: Int) {
        let ready = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.handled += count
            let handled = state.handled
            let ready = state.waiters.filter { $0.count <= handled }.map(\.continuation)
            state.waiters.removeAll { $0.count <= handled }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// Returns once `count` events are handled.
    func wait(until count: Int) async {
        await withCheckedContinuation { continuation in
            let now = state.withLockedValue { state -> Bool in
                if state.handled >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Lets every waiter go (the pipeline ended: nothing more will be handled).
    func finish() {
        let all = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.handled = .max
            defer { state.waiters = [] }
            return state.waiters.map(\.continuation)
        }
        for continuation in all { continuation.resume() }
    }
}
