import AsyncAlgorithms
import NIOConcurrencyHelpers

/// The elapsed clock's task: iterates an `AsyncTimerSequence` on an injected clock and calls `onTick`
/// once per interval. `start` creates the task and stores its handle, `stop` cancels it; both are idempotent.
/// Tests inject a manual clock and advance it instead of sleeping.
final class ClockTicker<C: Clock>: Sendable where C.Duration == Duration {
    private let clock: C
    private let interval: Duration
    private let onTick: @Sendable () -> Void
    private let task = NIOLockedValueBox<Task<Void, Never>?>(nil)

    init(clock: C, interval: Duration = .seconds(1), onTick: @escaping @Sendable () -> Void) {
        self.clock = clock
        self.interval = interval
        self.onTick = onTick
    }

    deinit {
        stop()
    }

    var isRunning: Bool { task.withLockedValue { $0 != nil } }

    func start() {
        task.withLockedValue { task in
            guard task == nil else { return }
            let ticks = AsyncTimerSequence(interval: interval, clock: clock)
            let onTick = self.onTick
            task = Task {
                for await _ in ticks {
                    if Task.isCancelled { break }
                    onTick()
                }
            }
        }
    }

    func stop() {
        let running = task.withLockedValue { task in
            defer { task = nil }
            return task
        }
        running?.cancel()
    }
}
