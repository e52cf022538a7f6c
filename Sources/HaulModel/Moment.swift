/// A point in time as the model counts it: the time since an origin its owner chose, on a monotonic clock
/// its owner reads (the service's injected clock; the screen's ticks). The model reads no clock itself:
/// `DownloadRecord.apply(_:at:)` is told when an event came, and `speed(at:)` when it is asked.
package struct Moment: Sendable, Hashable, Comparable {
    package var sinceOrigin: Duration

    package init(_ sinceOrigin: Duration) {
        self.sinceOrigin = sinceOrigin
    }

    /// The origin itself.
    package static let origin = Moment(.zero)

    package func duration(to later: Moment) -> Duration {
        later.sinceOrigin - sinceOrigin
    }

    package static func + (moment: Moment, duration: Duration) -> Moment {
        Moment(moment.sinceOrigin + duration)
    }

    package static func < (lhs: Moment, rhs: Moment) -> Bool {
        lhs.sinceOrigin < rhs.sinceOrigin
    }
}
