/// Counters over download requests (`/files/download`) since the server started or ``SampleServer/resetStats()``.
public struct SampleServerStats: Sendable, Equatable {
    /// Download requests (GET and HEAD) received, whatever their answer.
    public var requests: Int
    /// Response body bytes handed to the sockets, over all download responses.
    public var bodyBytesSent: Int
    /// Download requests that carried a `Range` header.
    public var rangeRequests: Int

    /// All counters at zero.
    public init(requests: Int = 0, bodyBytesSent: Int = 0, rangeRequests: Int = 0) {
        self.requests = requests
        self.bodyBytesSent = bodyBytesSent
        self.rangeRequests = rangeRequests
    }
}
