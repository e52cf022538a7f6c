import Foundation
import HaulCore

/// The one clock the service reads, made once where the process starts (`ServiceRunner.serve`) and handed down
/// to everything that times, waits or dates: monotonic time as `Moment`s, which its timers sleep on (a rate's
/// measure, the idle exit, the store's checkpoint and group commit, a WebSocket's stalled write, the secret
/// gate's minute), and wall-clock dates (a row's `added`, `started`, `finished`). A test hands down one made on
/// a manual clock and drives every interval with it.
///
/// A `Clock` itself, for what is generic over one (`StoreCommits`): its instants are its moments.
struct ServiceClock: Clock {
    struct Instant: InstantProtocol {
        var moment: Moment

        func advanced(by duration: Duration) -> Instant { Instant(moment: moment + duration) }
        func duration(to other: Instant) -> Duration { moment.duration(to: other.moment) }
        static func < (a: Instant, b: Instant) -> Bool { a.moment < b.moment }
    }

    /// Monotonic time, read and slept on.
    let moments: MomentClock
    /// Wall-clock time, for the dates the store keeps and the clients are shown.
    let date: @Sendable () -> Date

    init(_ moments: MomentClock, date: @escaping @Sendable () -> Date) {
        self.moments = moments
        self.date = date
    }

    /// The system's clocks, and the one place the service reads them: the continuous clock (which counts while
    /// the machine sleeps, as a download's time does) and the wall clock. `ServiceRunner` makes the service's
    /// one clock from them; the defaults of the parts it hands it to are these too, for tests that do not
    /// drive time.
    static var system: ServiceClock { ServiceClock(.continuous, date: { Date() }) }

    var moment: Moment { moments.now }

    var now: Instant { Instant(moment: moments.now) }

    var minimumResolution: Duration { .zero }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try await moments.sleep(for: now.duration(to: deadline))
    }
}
