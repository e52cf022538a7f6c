/// Bytes per second over a sliding window of recent samples.
struct RateMeter {
    private var samples: [(seconds: Double, bytes: Int64)] = []
    let window: Double

    init(window: Double = 3) {
        self.window = window
    }

    /// Records that `bytes` had been received `seconds` after some fixed origin.
    mutating func record(bytes: Int64, at seconds: Double) {
        samples.append((seconds, bytes))
        while samples.count > 2, seconds - samples[1].seconds >= window {
            samples.removeFirst()
        }
    }

    var bytesPerSecond: Double {
        guard let first = samples.first, let last = samples.last else { return 0 }
        return Self.rate(of: last.bytes - first.bytes, over: last.seconds - first.seconds)
    }

    /// `bytes` over `seconds`; 0 under a millisecond, too short to say.
    static func rate(of bytes: Int64, over seconds: Double) -> Double {
        seconds > 0.001 ? Double(bytes) / seconds : 0
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    package var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
