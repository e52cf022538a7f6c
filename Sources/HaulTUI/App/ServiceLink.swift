import HaulCore

/// How a screen attached to the service reaches it: the service's events from the start, and a way back to
/// it when the service went away (`haul service stop`, a crash). Nil for the downloads of this process
/// (`--demo`), whose events end only with the screen.
package struct ServiceLink: Sendable {
    /// What the service's event stream brings, in order.
    package typealias Feed = EventFeed

    /// The service's events from the start: the snapshot, `.live` at its end, then each as it happens. Ends
    /// when the service goes (stopped, crashed, not reachable).
    var events: @Sendable () -> AsyncStream<Feed>
    /// Connects again, starting the service when none runs, as any client does; throws why it could not.
    var connect: @Sendable () async throws(HaulError) -> Void

    package init(events: @escaping @Sendable () -> AsyncStream<Feed>,
                 connect: @escaping @Sendable () async throws(HaulError) -> Void) {
        self.events = events
        self.connect = connect
    }
}

/// How long a screen that lost the service waits before each attempt to connect again: 1 s, then twice as
/// long each time up to 30 s. A connection that lasted a while (`resetAfter`) starts the count again; one
/// that ended soon after it was made does not, so a service that stops (or crashes) at once after each
/// start is started again less and less often, never in a tight loop.
enum ReconnectBackoff {
    static let first = Duration.seconds(1)
    static let longest = Duration.seconds(30)
    static let resetAfter = Duration.seconds(30)

    /// The wait before the attempt after `step` earlier ones (0: the first).
    static func delay(step: Int) -> Duration {
        var delay = first
        for _ in 0..<min(step, 8) { delay = min(longest, delay * 2) }
        return delay
    }
}
