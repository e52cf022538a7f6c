import Foundation

/// What a ``SampleServer`` listens on and serves.
public struct SampleServerConfiguration: Sendable {
    /// Address to bind, `127.0.0.1` by default.
    public var host: String
    /// Port to bind; 0 picks a free ephemeral port (read it back from ``SampleServer/port``).
    public var port: Int
    /// Bytes per second for each download response body, or `nil` for no limit.
    public var rate: Int?
    /// A directory whose regular files are also served by name (never anything outside it).
    public var root: String?
    /// How many pieces a second a throttled body is written in (20: each 1/20 s of data). Crash tests pace
    /// finer, so that a client killed mid-stream has little on its way, as from a server pacing socket writes.
    public var chunksPerSecond = 20
    /// The generated binary files to serve.
    public var files: [GeneratedFile]
    /// Whether to serve the generated progressive JPEGs (`photo-*.jpg`).
    public var jpegs: Bool
    /// Receives one line per download request and per injected fault, for an access log. `nil` logs nothing.
    public var requestLog: (@Sendable (String) -> Void)?
    /// `USER:PASSWORD`: downloads need HTTP Basic authentication with it (401 otherwise).
    public var login: String?
    /// `NAME=VALUE`: downloads need this cookie (403 otherwise), and every download answer sets
    /// `sample-visits=N` (so a client's cookie jar has something to save).
    public var cookie: String?
    /// PEM certificate (chain) and private key files: the server speaks HTTPS only.
    public var tls: (certificate: String, privateKey: String)?

    /// The server's clock, in seconds since 1970: what a signed link's expiry (`/signed/`) is compared with. The
    /// system's time unless a test gives its own, which it then moves on to make a link expire.
    public var now: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    /// How long a link from `/sign/NAME` lasts, in seconds of `now`.
    public var signedLinkLifetime: Int64 = 60
    /// How many requests one signed link serves (nil: any number until it expires).
    public var signedLinkUses: Int?

    /// Creates a configuration; the defaults serve ``GeneratedFile/standardSet`` and the JPEGs on 127.0.0.1:8080.
    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        rate: Int? = nil,
        root: String? = nil,
        files: [GeneratedFile] = GeneratedFile.standardSet,
        jpegs: Bool = true,
        requestLog: (@Sendable (String) -> Void)? = nil
    ) {
        self.host = host
        self.port = port
        self.rate = rate
        self.root = root
        self.files = files
        self.jpegs = jpegs
        self.requestLog = requestLog
    }
}
