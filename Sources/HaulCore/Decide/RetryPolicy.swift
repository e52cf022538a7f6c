/// When and how long to wait before trying a failed download again.
struct RetryPolicy: Sendable {
    var base: Duration = .milliseconds(500)
    var cap: Duration = .seconds(30)

    init() {}

    /// Network failures, 5xx, 408 and 429 may pass; everything else will fail again.
    func isTransient(_ error: HaulError) -> Bool {
        switch error.category {
        case .network: true
        case .server: error.httpStatus.map { $0 >= 500 || $0 == 408 || $0 == 429 } ?? false
        default: false
        }
    }

    /// Exponential backoff with jitter (50 % to 100 % of base * 2^(n-1), capped); `Retry-After` wins.
    func delay(afterFailure n: Int, retryAfter: Duration?) -> Duration {
        if let retryAfter { return Swift.min(retryAfter, .seconds(300)) }
        var exponential = base
        for _ in 1..<Swift.max(1, n) where exponential < cap { exponential *= 2 }
        exponential = Swift.min(exponential, cap)
        return exponential * Double.random(in: 0.5...1.0)
    }
}
