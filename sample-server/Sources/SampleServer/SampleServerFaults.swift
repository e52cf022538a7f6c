/// Misbehaviour to inject into download responses (`/files/download`), for testing clients.
///
/// Set with ``SampleServer/setFaults(_:)``; the new value applies from the next request on and restarts the
/// counters behind ``dropLimit`` and ``unavailableCount``.
public struct SampleServerFaults: Sendable, Equatable {
    /// Close the connection abruptly after this many body bytes of a response, short of its `Content-Length`.
    public var dropAfterBytes: Int?
    /// How many responses are dropped by ``dropAfterBytes``; `nil` drops every one.
    public var dropLimit: Int?
    /// Answer `503 Service Unavailable` with `Retry-After` to the first this-many download requests (GET and HEAD).
    public var unavailableCount: Int
    /// The `Retry-After` value, in seconds, sent with the 503 answers.
    public var retryAfterSeconds: Int
    /// After ``stallAfterBytes`` body bytes, send nothing for this many seconds, then continue.
    public var stallSeconds: Double?
    /// Where in each response body the stall happens.
    public var stallAfterBytes: Int
    /// Answer `200` with the whole file even when a `Range` is asked for (still advertising `Accept-Ranges: bytes`,
    /// like a misconfigured proxy).
    public var ignoreRange: Bool
    /// Mixed into every `ETag` and `Last-Modified`: changing it makes files look modified on the server.
    public var etagSalt: String?
    /// Send this `Content-Disposition` value verbatim instead of the file's own (a hostile or odd name).
    public var contentDisposition: String?
    /// When set, all other faults apply only to the file with this name.
    public var only: String?

    /// No faults.
    public init() {
        dropAfterBytes = nil
        dropLimit = nil
        unavailableCount = 0
        retryAfterSeconds = 1
        stallSeconds = nil
        stallAfterBytes = 0
        ignoreRange = false
        etagSalt = nil
        contentDisposition = nil
        only = nil
    }

    func applies(to name: String) -> Bool {
        only.map { $0 == name } ?? true
    }
}
