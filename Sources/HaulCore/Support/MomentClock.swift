/// A clock read as `Moment`s: the time since the reading was set up, on the clock it was given. What the service
/// and the front ends time what they keep with (when a rate was measured, when a wrong secret came), so that a
/// test drives them all with one manual clock; the process gives them the continuous clock, once, where it
/// starts.
package struct MomentClock: Sendable {
    private let read: @Sendable () -> Duration
    private let wait: @Sendable (Duration) async throws -> Void

    package init<C: Clock<Duration>>(_ clock: C) {
        let origin = clock.now
        read = { origin.duration(to: clock.now) }
        wait = { try await clock.sleep(for: $0) }
    }

    /// The continuous clock (which counts while the machine sleeps, as a download's time does).
    package static var continuous: MomentClock { MomentClock(ContinuousClock()) }

    package var now: Moment { Moment(read()) }

    /// Sleeps for `duration` on the clock given, so that a timer waits on the clock its readings come from (a
    /// test's manual clock wakes it as it advances); throws `CancellationError` when the task is cancelled.
    package func sleep(for duration: Duration) async throws {
        try await wait(duration)
    }
}
