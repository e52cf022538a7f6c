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

    /// The chunk size to pace with: about 1/100 of a second of data, so the stream looks smooth even at low
    /// rates, and a client that dies has at most that much on its way (as from a server pacing socket writes,
    /// not seconds-long bursts: what a crash test counts as re-sent is the client's doing, not the pacing's).
    static func chunkSize(forRate rate: Int, maximum: Int) -> Int {
        Swift.min(maximum, Swift.max(1_024, rate / 100))
    }

    /// The bucket's size: 1/20 of a second of data (at least a chunk), so a sleep that overshoots is made up
    /// by the next chunks instead of lowering the rate.
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
