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
        guard let first = samples.first, let last = samples.last, last.seconds - first.seconds > 0.001
        else { return 0 }
        return Double(last.bytes - first.bytes) / (last.seconds - first.seconds)
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    package var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
