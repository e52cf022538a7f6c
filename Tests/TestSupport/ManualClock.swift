import NIOConcurrencyHelpers

/// A clock that moves only when a test says so. Sleepers wake when `advance` passes their deadline.
public final class ManualClock: Clock, Sendable {
    public struct Instant: InstantProtocol {
        public var offset: Duration
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [(deadline: Instant, continuation: CheckedContinuation<Void, any Error>, id: Int)] = []
        var nextID = 0
        /// Sleepers whose task was cancelled before they were registered.
        var cancelledEarly: Set<Int> = []
        /// Tasks waiting in `waitForSleepers` for this many sleepers.
        var sleeperWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        mutating func takeSatisfiedWaiters() -> [CheckedContinuation<Void, Never>] {
            let count = sleepers.count
            let ready = sleeperWaiters.filter { $0.count <= count }.map(\.continuation)
            sleeperWaiters.removeAll { $0.count <= count }
            return ready
        }
    }

    private let state = NIOLockedValueBox(State())

    public init() {}

    public var now: Instant { state.withLockedValue { $0.now } }
    public var minimumResolution: Duration { .zero }

    public func advance(by duration: Duration) {
        let due = state.withLockedValue { state in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }.map(\.continuation)
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for continuation in due { continuation.resume() }
    }

    public var sleeperCount: Int { state.withLockedValue { $0.sleepers.count } }

    /// Returns once at least `count` tasks sleep on this clock: how a test knows a timer is waiting
    /// before it advances the clock, without sleeping itself.
    public func waitForSleepers(_ count: Int = 1) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLockedValue { state -> Bool in
                if state.sleepers.count >= count { return true }
                state.sleeperWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Sleeps until `advance` reaches `deadline`; a cancelled task stops sleeping at once with
    /// `CancellationError`, as with the system clocks.
    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let id = state.withLockedValue { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLockedValue { state -> Bool? in
                    if state.cancelledEarly.remove(id) != nil { return false }
                    if deadline <= state.now { return true }
                    state.sleepers.append((deadline, continuation, id))
                    return nil
                }
                for waiter in state.withLockedValue({ $0.takeSatisfiedWaiters() }) { waiter.resume() }
                switch outcome {
                case true?: continuation.resume()
                case false?: continuation.resume(throwing: CancellationError())
                case nil: break
                }
            }
        } onCancel: {
            let cancelled = state.withLockedValue { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else {
                    state.cancelledEarly.insert(id)
                    return nil
                }
                return state.sleepers.remove(at: index).continuation
            }
            cancelled?.resume(throwing: CancellationError())
        }
    }
}

/// Byte batches handed out in order, advancing a manual clock before each one.
public struct ScriptedBytes: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    let steps: [(advance: Duration, bytes: [UInt8])]
    let clock: ManualClock

    public struct AsyncIterator: AsyncIteratorProtocol {
        var steps: ArraySlice<(advance: Duration, bytes: [UInt8])>
        let clock: ManualClock

        public mutating func next() async throws -> [UInt8]? {
            guard let step = steps.popFirst() else { return nil }
            clock.advance(by: step.advance)
            return step.bytes
        }
    }

    public init(steps: [(advance: Duration, bytes: [UInt8])], clock: ManualClock) {
        self.steps = steps
        self.clock = clock
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(steps: steps[...], clock: clock) }
}
