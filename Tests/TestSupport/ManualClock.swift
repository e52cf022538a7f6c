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
        var sleepers: [(deadline: Instant, continuation: CheckedContinuation<Void, any Error>)] = []
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

    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let ready = state.withLockedValue { state -> Bool in
                if deadline <= state.now { return true }
                state.sleepers.append((deadline, continuation))
                return false
            }
            if ready { continuation.resume() }
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
