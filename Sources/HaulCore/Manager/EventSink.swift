import NIOConcurrencyHelpers

/// Where the manager's events go: the `events` stream, or an observer called in place.
struct EventSink: Sendable {
    let stream: AsyncStream<ManagerEvent>.Continuation
    let batches: EventBacklog?
    let observer: (@Sendable (ManagerEvent) -> Void)?
    /// Events put in `stream` (or `batches`) so far, counted in their own order (under the lock, with the
    /// yield).
    let yielded = NIOLockedValueBox(0)

    func yield(_ event: ManagerEvent) {
        if let observer {
            observer(event)
        } else {
            yielded.withLockedValue { count in
                if let batches { batches.append(event) } else { stream.yield(event) }
                count += 1
            }
        }
    }

    func finish() {
        stream.finish()
        batches?.finish()
    }
}
