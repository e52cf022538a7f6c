import HaulCore
import NIOConcurrencyHelpers

/// The manager's events between the roster, which takes each as it comes, and the store, which writes
/// whatever came while its last transaction was being written in the next one: a group commit. One
/// transaction an event made 1000 small downloads cost the service about 4000 transactions, 39 `fcntl`
/// locks a download and twice the CPU of the downloads themselves; under load a transaction now holds
/// as many events as arrive during one, and an idle service still writes each event at once.
///
/// One producer (`append`, `finish`) and one consumer (`next`).
final class EventBacklog: Sendable {
    private struct State {
        var events: [ManagerEvent] = []
        var waiter: CheckedContinuation<[ManagerEvent]?, Never>?
        var finished = false
    }
    private let state = NIOLockedValueBox(State())

    func append(_ event: ManagerEvent) {
        let waiter = state.withLockedValue { state -> CheckedContinuation<[ManagerEvent]?, Never>? in
            precondition(!state.finished, "an event after the backlog was finished")
            guard let waiter = state.waiter else {
                state.events.append(event)
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: [event])
    }

    /// No more events: `next` returns what is left, then nil.
    func finish() {
        let waiter = state.withLockedValue { state -> CheckedContinuation<[ManagerEvent]?, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Every event appended since the last call, in order, waiting for one when there is none; nil once
    /// the backlog is finished and empty.
    func next() async -> [ManagerEvent]? {
        await withCheckedContinuation { continuation in
            let ready = state.withLockedValue { state -> [ManagerEvent]?? in
                precondition(state.waiter == nil, "two readers of one backlog")
                if !state.events.isEmpty {
                    defer { state.events = [] }
                    return .some(state.events)
                }
                if state.finished { return .some(nil) }
                state.waiter = continuation
                return .none
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
