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

    /// Over TLS (`https://`, the scheme in any case).
    var isHTTPS: Bool { url.prefix(6).lowercased() == "https:" }

    /// The protocols haul speaks besides HTTP, each through libcurl (`URLCheck` takes no other scheme).
    enum RemoteFileProtocol: Sendable, Equatable {
        /// `ftp://` and `ftps://` (TLS from the start; `--ssl-reqd` asks `ftp://` to upgrade).
        case ftp
        /// `sftp://`: SSH's file transfer protocol, which can seek (ranges, resume).
        case sftp
        /// `scp://`: a copy of the whole file, no offset.
        case scp

        var overSSH: Bool { self != .ftp }
    }

    /// The protocol of a URL that is not HTTP's, nil for `http://` and `https://`.
    var remoteFileProtocol: RemoteFileProtocol? {
        Self.remoteFileProtocol(of: url)
    }

    static func remoteFileProtocol(of url: String) -> RemoteFileProtocol? {
        // The common case at a glance, with no string made: a scheme that starts with `h` is HTTP's.
        guard let first = url.utf8.first, first | 0x20 != UInt8(ascii: "h"),
            let colon = url.utf8.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        switch url[..<colon].lowercased() {
        case "ftp", "ftps": return .ftp
        case "sftp": return .sftp
        case "scp": return .scp
        default: return nil
        }
    }

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
