/// Counters over download requests (`/files/download`) since the server started or ``SampleServer/resetStats()``.
public struct SampleServerStats: Sendable, Equatable {
    /// Download requests (GET and HEAD) received, whatever their answer.
    public var requests: Int
    /// Of those, the HEAD requests (a client opening connections ahead asks with HEAD).
    public var headRequests: Int
    /// Response body bytes handed to the sockets, over all download responses.
    public var bodyBytesSent: Int
    /// Download requests that carried a `Range` header.
    public var rangeRequests: Int
    /// Of those, the ranges with no last byte (`bytes=N-`, or a suffix `bytes=-N`): the ones a client cannot
    /// bound, so a client that splits a file exactly asks for none of them past its first.
    public var openRangeRequests: Int
    /// Response bodies being streamed now: 0 once every body has ended (sent, or cut by a client gone), so
    /// `bodyBytesSent` no longer moves.
    public var bodiesStreaming: Int
    /// Times a response body waited for its rate limit before sending a chunk: more than zero once a throttle
    /// has paced anything; it does not move while no throttle is set.
    public var throttleWaits: Int
    /// The bytes each GET's body was to carry, in arrival order: what a client asked for, which
    /// `bodyBytesSent` cannot tell (it also counts what was in flight when a client cut an answer short).
    public var bodies: [Range<Int>]

    /// The GET requests: the ones that ask for bytes.
    public var getRequests: Int { requests - headRequests }

    /// All counters at zero.
    public init(requests: Int = 0, headRequests: Int = 0, bodyBytesSent: Int = 0, rangeRequests: Int = 0,
                openRangeRequests: Int = 0, bodiesStreaming: Int = 0, throttleWaits: Int = 0, bodies: [Range<Int>] = []) {
        self.headRequests = headRequests
        self.openRangeRequests = openRangeRequests
        self.bodiesStreaming = bodiesStreaming
        self.throttleWaits = throttleWaits
        self.requests = requests
        self.bodyBytesSent = bodyBytesSent
        self.rangeRequests = rangeRequests
        self.bodies = bodies
    }
}
