/// Everything a transfer needs to know before it starts.
package struct HTTPRequest: Sendable, Equatable {
    package enum Method: String, Sendable { case get = "GET", head = "HEAD", post = "POST" }

    var url: String
    var method: Method = .get
    /// Extra request headers, "Name: value" each, sent as given.
    package var headers: [String] = []
    /// First byte wanted (inclusive) and last (inclusive, nil = to the end). nil = the whole resource.
    var range: (first: Int64, last: Int64?)? {
        get { rangeStart.map { ($0, rangeEnd) } }
        set { rangeStart = newValue?.first; rangeEnd = newValue?.last }
    }
    /// `If-Range` validator (an ETag or an HTTP date): the server sends the range only if it still matches.
    var ifRange: String?
    /// The body of a POST (the service's commands: small JSON documents).
    package var body: [UInt8]?
    /// Connect to this Unix domain socket instead of the URL's host and port (the service's control socket).
    package var unixSocketPath: String?
    /// A TCP connection of its own, never shared with another transfer at the same time (`-s N`'s segments,
    /// so that a limit per connection limits each). Otherwise an HTTPS transfer waits to share a host's
    /// HTTP/2 connection as one more stream rather than open a connection of its own.
    var ownConnection = false
    package var options = TransferOptions()

    /// Over TLS (`https://`, the scheme in any case); haul asks for `http://` and `https://` only.
    var isHTTPS: Bool { url.prefix(6).lowercased() == "https:" }

    private var rangeStart: Int64?
    private var rangeEnd: Int64?

    package init(url: String, method: Method = .get, options: TransferOptions = TransferOptions()) {
        self.url = url
        self.method = method
        self.options = options
    }

    /// The value of curl's `CURLOPT_RANGE` ("100-" or "100-199"), nil for the whole resource.
    var curlRange: String? {
        guard let first = rangeStart else { return nil }
        return rangeEnd.map { "\(first)-\($0)" } ?? "\(first)-"
    }
}
