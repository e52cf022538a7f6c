/// Judges the race of a segmented download's connections, once: when `window` has passed since they
/// started and all have brought bytes, it returns the slowest one's rate if even that one is
/// `notLimited` or faster (one connection is then as good, and the others only cost), nil otherwise. On
/// loopback four connections each brought 110-250 MB/s, where a limit per connection (nginx's
/// `limit_rate`, a shaping network) leaves each far below.
///
/// The verdict for unlimited connections comes sooner when it can: once every connection has brought
/// `earlyBytes` at `notLimited` or faster. A connection held to a rate R that sends a first burst of B at
/// once brings (B + R t) / t by the time it has E = `earlyBytes`, which reaches `notLimited` only when
/// R >= notLimited x (E - B) / E: with 16 MiB, 64 MiB/s and a first send of 4 MiB (nginx sends at most
/// 2 MiB at a time; a socket's buffer holds a few), every limit below 48 MiB/s is told apart, and one above
/// that which passes is caught by the `LoneWatch` afterwards. On loopback, where four connections together
/// are slower than one (they share two cores with the disk writes), the race then ends after 16 MiB each
/// (60-150 ms) instead of 32 MiB or the whole window.
struct RaceJudge<Instant: InstantProtocol> where Instant.Duration == Duration {
    let window: Duration
    let notLimited: Int64
    let earlyBytes: Int64
    let workers: Int
    private let start: Instant
    private var bytes: [Int: Int64] = [:]
    private var judged = false

    init(window: Duration, notLimited: Int64, earlyBytes: Int64, workers: Int, from start: Instant) {
        self.window = window
        self.notLimited = notLimited
        self.earlyBytes = earlyBytes
        self.workers = workers
        self.start = start
    }

    /// What all the connections brought together per second, from the start to `now`.
    func rateTogether(at now: Instant) -> Double {
        Double(bytes.values.reduce(0, +)) / Swift.max(start.duration(to: now).seconds, 0.001)
    }

    mutating func verdict(worker: Int, bytes count: Int64, at now: Instant) -> Double? {
        bytes[worker, default: 0] += count
        guard !judged else { return nil }
        let elapsed = start.duration(to: now)
        // Every connection has to have shown what it can (a file with fewer pieces than connections is
        // never judged: its connections end soon anyway).
        guard bytes.count == workers else { return nil }
        let fewest = Double(bytes.values.min() ?? 0)
        if elapsed < window {
            let rate = fewest / Swift.max(elapsed.seconds, 0.001)
            guard fewest >= Double(earlyBytes), rate >= Double(notLimited) else { return nil }
            judged = true
            return rate
        }
        judged = true
        let slowest = fewest / elapsed.seconds
        return slowest >= Double(notLimited) ? slowest : nil
    }
}
