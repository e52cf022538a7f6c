/// Watches the connection that went on alone after the race: if over a `window` it brings less than half of
/// what all of them brought together during the race, something limits it after all (a limit that starts
/// after the first bytes, such as nginx's `limit_rate_after`, or a burst allowance larger than the race
/// could see), and the others are called back. Once: returns that window's rate the first time.
struct LoneWatch<Instant: InstantProtocol> where Instant.Duration == Duration {
    let window: Duration
    /// Below this many bytes per second the lone connection is slower than half the race.
    let floor: Double
    private var start: Instant
    private var bytes: Int64 = 0
    private var fired = false

    init(window: Duration, raceRate: Double, from start: Instant) {
        self.window = window
        floor = raceRate / 2
        self.start = start
    }

    mutating func slowed(bytes count: Int64, at now: Instant) -> Double? {
        guard !fired else { return nil }
        bytes += count
        let elapsed = start.duration(to: now)
        guard elapsed >= window else { return nil }
        let rate = Double(bytes) / elapsed.seconds
        guard rate < floor else {
            start = now
            bytes = 0
            return nil
        }
        fired = true
        return rate
    }
}
