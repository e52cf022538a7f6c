import Glibc

/// A reading of the monotonic clock, in nanoseconds: what a transfer's per-chunk path times things with.
///
/// Not `ContinuousClock.Instant`: that type is resilient (the standard library may change its layout), so every
/// struct or enum that stores one has a layout known only at run time, and the code that copies or switches
/// over it goes through the runtime's value witnesses. The curl thread's write callback, which runs for every
/// 16 KiB (HTTP/1.1) or 8 KiB (nginx's HTTP/2 frames), spent more on that than on its own work. This has a fixed
/// layout, so the transfer's state compiles to plain loads and stores.
struct TransferInstant: Comparable, Sendable {
    let nanoseconds: Int64

    init(nanoseconds: Int64) {
        self.nanoseconds = nanoseconds
    }

    /// Now, on `CLOCK_MONOTONIC`.
    static var now: TransferInstant {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return TransferInstant(nanoseconds: Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec))
    }

    func advanced(by duration: Duration) -> TransferInstant {
        TransferInstant(nanoseconds: nanoseconds + Self.nanoseconds(of: duration))
    }

    func duration(to other: TransferInstant) -> Duration {
        let difference = other.nanoseconds - nanoseconds
        return Duration(secondsComponent: difference / 1_000_000_000,
                        attosecondsComponent: (difference % 1_000_000_000) * 1_000_000_000)
    }

    static func < (lhs: TransferInstant, rhs: TransferInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    private static func nanoseconds(of duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

/// A task waiting on a transfer, for its head or for its bytes: resumed once, by whoever the state machine
/// hands it to.
///
/// A class around the checked continuation for the same reason as `TransferInstant`: `CheckedContinuation` is
/// resilient, and the transfer's state (which holds its waiters) would otherwise have a layout known only at
/// run time. One allocation per wait (per batch, not per chunk) keeps the checks of a checked continuation.
final class TransferWaiter<Value: Sendable>: Sendable {
    private let continuation: CheckedContinuation<Value, any Error>

    init(_ continuation: CheckedContinuation<Value, any Error>) {
        self.continuation = continuation
    }

    func resume(returning value: Value) {
        continuation.resume(returning: value)
    }

    func resume(throwing error: any Error) {
        continuation.resume(throwing: error)
    }

    func resume(with result: Result<Value, any Error>) {
        continuation.resume(with: result)
    }
}
