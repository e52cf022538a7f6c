import NIOConcurrencyHelpers

/// A one-way signal: `wait()` returns once `open()` has been called (at once if it already was).
/// For "this thread has ended" and similar facts that become true once.
package final class Latch: Sendable {
    private let state = NIOLockedValueBox<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    package init() {}

    package func open() {
        let waiters = state.withLockedValue { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    package func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let open = state.withLockedValue { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if open { continuation.resume() }
        }
    }
}
