/// Misbehaviour to inject into download responses (`/files/download`), for testing clients.
///
/// Set with ``SampleServer/setFaults(_:)``; the new value applies from the next request on and restarts the
/// counters behind ``dropLimit`` and ``unavailableCount``.
public struct SampleServerFaults: Sendable, Equatable {
    /// Close the connection abruptly after this many body bytes of a response, short of its `Content-Length`.
    public var dropAfterBytes: Int?
    /// How many responses are dropped by ``dropAfterBytes``; `nil` drops every one.
    public var dropLimit: Int?
    /// Answer `503 Service Unavailable` with `Retry-After` to the first this-many GET download requests, and to
    /// every HEAD until then (a HEAD does not count).
    public var unavailableCount: Int
    /// The `Retry-After` value, in seconds, sent with the 503 answers.
    public var retryAfterSeconds: Int
    /// Answer `503 Service Unavailable` (with no `Retry-After`) to a GET while this many response bodies are
    /// being sent: a server that limits how many connections a client may have at once, as nginx's
    /// `limit_conn` does. HEAD requests are not limited.
    public var bodiesAtOnce: Int?
    /// After ``stallAfterBytes`` body bytes, send nothing for this many seconds, then continue.
    public var stallSeconds: Double?
    /// Where in each response body the stall happens.
    public var stallAfterBytes: Int
    /// Offsets in the file where a body stops, sending nothing, until ``SampleServer/release()`` has been called
    /// as often as the offset's place in this list (once for the first, twice for the second): a test pins a
    /// download at known points for as long as it needs, with no timing. A body holds at an offset inside its
    /// range only, before sending the byte there.
    public var holdAt: [Int]
    /// Answer `200` with the whole file even when a `Range` is asked for (still advertising `Accept-Ranges: bytes`,
    /// like a misconfigured proxy).
    public var ignoreRange: Bool
    /// Answer a `Range` request with `206` and other bytes than the ones asked for, saying so honestly in
    /// `Content-Range` (a broken cache or proxy): see ``RangeFault``.
    public var wrongRange: RangeFault?
    /// Send neither `ETag` nor `Last-Modified`, so a client has nothing to check a resume against.
    public var omitValidators: Bool
    /// Mixed into every `ETag` and `Last-Modified`: changing it makes files look modified on the server.
    public var etagSalt: String?
    /// Answer a `Range` with `206` even when its `If-Range` names another version of the file (a server or
    /// cache that ignores `If-Range`): with ``etagSalt`` changed, the range of the "new" file comes with the
    /// new validators.
    public var ignoreIfRange: Bool
    /// Mixed into the validators of answers to ranges that do not start at byte 0 only: two versions behind
    /// one name, where a probe from byte 0 sees one and the other segments the other.
    public var etagSaltPastStart: String?
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
        bodiesAtOnce = nil
        stallSeconds = nil
        stallAfterBytes = 0
        holdAt = []
        ignoreRange = false
        wrongRange = nil
        omitValidators = false
        etagSalt = nil
        ignoreIfRange = false
        etagSaltPastStart = nil
        contentDisposition = nil
        only = nil
    }

    /// How ``wrongRange`` answers a request for `first-last` of a file of `size` bytes.
    public enum RangeFault: Sendable, Equatable {
        /// From byte 0, as many bytes as were asked for (a resume answered with the file's start).
        case fromStart
        /// A range that does not start at byte 0, moved by this many bytes (clamped to the file); one that
        /// starts at 0 (a probe) is answered right, so a segmented download gets as far as its segments.
        case shifted(Int)
        /// The range asked for, with a different total size in `Content-Range`.
        case wrongTotal
    }

    func applies(to name: String) -> Bool {
        only.map { $0 == name } ?? true
    }
}
