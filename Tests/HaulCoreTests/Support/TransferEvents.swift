import NIOConcurrencyHelpers
@testable import HaulCore

/// Records what a test's `CurlDriver` tells its observer, and lets a test wait for an event: the waiting
/// lives here, not in the transport.
final class TransferEvents: Sendable {
    private struct Waiter {
        let transfer: ObjectIdentifier
        let isDue: @Sendable ([TransferEvent]) -> Bool
        let continuation: CheckedContinuation<Void, Never>
    }

    private let state = NIOLockedValueBox((events: [ObjectIdentifier: [TransferEvent]](), waiters: [Waiter](),
                                           anyWaiters: [(id: Int, event: TransferEvent,
                                                         continuation: CheckedContinuation<Void, Never>)](),
                                           nextWaiter: 0))

    /// A driver whose transfers this records (the last one made, for `driverLimitsChanged`).
    func driver(highWatermark: Int = 1 << 20, aheadPatience: Duration = .seconds(5)) -> CurlDriver {
        let driver = CurlDriver(highWatermark: highWatermark, aheadPatience: aheadPatience,
                                observer: { [self] in record($0, $1) })
        made.withLockedValue { $0 = driver }
        return driver
    }

    private let made = NIOLockedValueBox<CurlDriver?>(nil)

    /// `limitsChanged()` on the driver made last.
    func driverLimitsChanged() {
        made.withLockedValue { $0 }?.limitsChanged()
    }

    private func record(_ transfer: ObjectIdentifier, _ event: TransferEvent) {
        let due = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.events[transfer, default: []].append(event)
            let seen = state.events[transfer] ?? []
            let due = state.waiters.filter { $0.transfer == transfer && $0.isDue(seen) }
            state.waiters.removeAll { $0.transfer == transfer && $0.isDue(seen) }
            let anyDue = state.anyWaiters.filter { $0.event == event }.map(\.continuation)
            state.anyWaiters.removeAll { $0.event == event }
            return due.map(\.continuation) + anyDue
        }
        for waiter in due { waiter.resume() }
    }

    /// Returns once `isDue` holds for what `transfer` has reported.
    func wait(for transfer: Transfer, until isDue: @escaping @Sendable ([TransferEvent]) -> Bool) async {
        let id = transfer.id
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLockedValue { state -> Bool in
                if isDue(state.events[id] ?? []) { return true }
                state.waiters.append(Waiter(transfer: id, isDue: isDue, continuation: continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Returns once the transfer has been paused more than `count` times, or has closed.
    func waitUntilPaused(_ transfer: Transfer, moreThan count: Int) async {
        await wait(for: transfer) { events in
            events.contains { event in
                if case .paused(let n) = event { return n > count }
                return event == .closed
            }
        }
    }

    /// Returns once any transfer of this driver has reported `event`, or the task is cancelled (a test's
    /// `within` ends it so).
    func waitForAny(_ event: TransferEvent) async {
        let id = state.withLockedValue { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLockedValue { state -> Bool in
                    // Under the lock: a cancellation whose handler ran before finds nothing to resume.
                    if Task.isCancelled || state.events.values.contains(where: { $0.contains(event) }) { return true }
                    state.anyWaiters.append((id, event, continuation))
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
                guard let index = state.anyWaiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.anyWaiters.remove(at: index).continuation
            }
            waiter?.resume()
        }
    }

    /// How many times any transfer of this driver has reported what `matches`.
    func count(where matches: (TransferEvent) -> Bool) -> Int {
        state.withLockedValue { $0.events.values.reduce(0) { $0 + $1.count(where: matches) } }
    }

    /// What `transfer` has reported so far.
    func seen(_ transfer: Transfer) -> [TransferEvent] {
        state.withLockedValue { $0.events[transfer.id] ?? [] }
    }

    /// Returns once the transfer's curl handle has been removed and freed.
    func waitUntilClosed(_ transfer: Transfer) async {
        await wait(for: transfer) { $0.contains(.closed) }
    }
}
