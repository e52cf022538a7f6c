import NIOConcurrencyHelpers

/// One download's receive cap, shared by all its transfers (its segments) and changeable while they run:
/// the TUI's and the aria2 face's live rate for that row (`max-download-limit`).
///
/// The driver splits the cap evenly over the download's running transfers, and each transfer also keeps
/// within its share of the overall cap (`--limit-rate`). Bound for one download's task with
/// `ReceiveLimit.$current` (child tasks inherit it); `CurlDriver.start` reads it when a transfer starts.
final class ReceiveLimit: Sendable {
    private let value: NIOLockedValueBox<Int64?>

    /// The limit bound to the download running in this task, if any.
    @TaskLocal static var current: ReceiveLimit?

    /// `bytesPerSecond`: nil or 0 = none.
    init(_ bytesPerSecond: Int64? = nil) {
        value = NIOLockedValueBox(Self.normalized(bytesPerSecond))
    }

    /// Bytes per second for the whole download; nil = none.
    var bytesPerSecond: Int64? {
        value.withLockedValue { $0 }
    }

    /// Sets the cap; the running transfers take it when their driver rebalances (`CurlDriver.limitsChanged`).
    func set(_ bytesPerSecond: Int64?) {
        value.withLockedValue { $0 = Self.normalized(bytesPerSecond) }
    }

    private static func normalized(_ rate: Int64?) -> Int64? {
        guard let rate, rate > 0 else { return nil }
        return rate
    }
}
