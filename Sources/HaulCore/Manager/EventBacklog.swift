import NIOConcurrencyHelpers

/// The manager's events between the one who appends them and one reader, who takes whatever came
/// while it was busy in one batch. Two users, both in the service:
///
/// - The manager itself, when made with `DownloadManager(batched: true)`: the one task that applies events
///   to the roster and writes them to the store (`ServiceRunner`, `StoreCommits`) takes them in batches,
///   one hop onto the service's actor a batch instead of a wake-up and a hop for each event, and the store
///   writes whatever came while its last transaction was being written in the next one, a group commit.
///   One transaction an event made 1000 small downloads cost the service about 4000 transactions, 39
///   `fcntl` locks a download and twice the CPU of the downloads themselves; under load a transaction now
///   holds as many events as arrive during one, and an idle service still writes each event at once.
/// - Each attached client's event stream (`Service.subscribe`): what came while the last write to the
///   socket was under way goes out in the next one. One write an event was 7000 `writev`s for 1000 small
///   files, and as many wake-ups of the client's reader.
///
/// Bounded (`capacity`): an append beyond it is refused and the backlog finished, for a client that stopped
/// reading (it is let go rather than held in memory). Appends from any thread (the manager's are made in
/// the order it counts its events, under its lock); one consumer (`next`), which gets nil when its task is
/// cancelled.
package final class EventBacklog: Sendable {
    private struct State {
        var events: [ManagerEvent] = []
        var waiter: CheckedContinuation<[ManagerEvent]?, Never>?
        var finished = false
    }
    private let state = NIOLockedValueBox(State())
    /// The most events that may wait; nil: no bound.
    private let capacity: Int?

    package init(capacity: Int? = nil) {
        self.capacity = capacity
    }

    /// Adds `event`; false when it was not taken: the backlog is finished, or was full (and is finished now).
    @discardableResult
    package func append(_ event: ManagerEvent) -> Bool {
        append(contentsOf: CollectionOfOne(event))
    }

    /// Adds `events` in order; false when they were not all taken (as `append`).
    @discardableResult
    package func append(contentsOf events: some Collection<ManagerEvent>) -> Bool {
        guard !events.isEmpty else { return true }
        let (taken, waiter) = state.withLockedValue { state -> (Bool, CheckedContinuation<[ManagerEvent]?, Never>?) in
            if state.finished { return (false, nil) }
            if let waiter = state.waiter {
                state.waiter = nil
                return (true, waiter)
            }
            if let capacity, state.events.count + events.count > capacity {
                state.finished = true
                return (false, nil)
            }
            state.events.append(contentsOf: events)
            return (true, nil)
        }
        waiter?.resume(returning: Array(events))
        return taken
    }

    /// No more events: `next` returns what is left, then nil.
    package func finish() {
        let waiter = state.withLockedValue { state -> CheckedContinuation<[ManagerEvent]?, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Every event appended since the last call, in order, without waiting (empty when there is none).
    package func takeWaiting() -> [ManagerEvent] {
        state.withLockedValue { state in
            defer { state.events = [] }
            return state.events
        }
    }

    /// Every event appended since the last call, in order, waiting for one when there is none; nil once
    /// the backlog is finished and empty, or the caller's task is cancelled.
    package func next() async -> [ManagerEvent]? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLockedValue { state -> [ManagerEvent]?? in
                    precondition(state.waiter == nil, "two readers of one backlog")
                    if !state.events.isEmpty {
                        defer { state.events = [] }
                        return .some(state.events)
                    }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    state.waiter = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            // The waiter, if it waits, goes with nil; what was not taken stays for no one.
            let waiter = state.withLockedValue { state -> CheckedContinuation<[ManagerEvent]?, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }
}
