/// Paces a byte stream to `rate` bytes per second, allowing bursts of at most `capacity` bytes.
///
/// Time is passed in as seconds since the stream started, so the arithmetic is testable without a clock. The bucket
/// starts full: the first `capacity` bytes go out at once, then each reservation waits for its tokens.
struct TokenBucket: Sendable {
    let rate: Double
    let capacity: Double
    private var tokens: Double
    private var lastRefill: Double = 0

    init(rate: Int, capacity: Int) {
        precondition(rate > 0 && capacity > 0, "a token bucket needs a positive rate and capacity")
        self.rate = Double(rate)
        self.capacity = Double(capacity)
        self.tokens = Double(capacity)
    }

    /// The chunk size to pace with: 1/`perSecond` of a second of data (1/20 by default), so the stream looks
    /// smooth even at low rates. Finer pacing (`SampleServerConfiguration.chunksPerSecond`) leaves a client that
    /// dies less on its way, as from a server that paces socket writes: crash tests count re-sent bytes.
    static func chunkSize(forRate rate: Int, maximum: Int, perSecond: Int = 20) -> Int {
        Swift.min(maximum, Swift.max(1_024, rate / Swift.max(1, perSecond)))
    }

    /// The bucket's size: 1/20 of a second of data (at least a chunk), so with finer chunks a sleep that
    /// overshoots is made up by the next chunks instead of lowering the rate.
    static func capacity(forRate rate: Int, chunk: Int) -> Int {
        Swift.max(chunk, rate / 20)
    }

    /// Takes `bytes` tokens at time `now` and returns how many seconds to wait before sending them.
    mutating func reserve(_ bytes: Int, at now: Double) -> Double {
        if now > lastRefill {
            tokens = Swift.min(capacity, tokens + (now - lastRefill) * rate)
            lastRefill = now
        }
        tokens -= Double(bytes)
        return tokens >= 0 ? 0 : -tokens / rate
    }
}
