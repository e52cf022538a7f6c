/// Knobs that are the same for every transfer of one download.
///
/// Its values live in one shared, immutable box: a copy (every `HTTPRequest` and `DownloadJob` holds one,
/// and a small download copies them about ten times) is one reference count, not one for each of its eleven
/// strings. A change makes a new box (options change while a job is set up, not while it runs). Each option
/// is spelled out below rather than reached through `@dynamicMemberLookup`: a key path a read cost 2,400
/// instructions a small download more.
package struct TransferOptions: Sendable, Equatable, Codable {
    /// Every option at its default: what the command line shows and an older stored job lacks.
    package static let defaults = TransferOptions()

    private struct Values: Sendable, Equatable, Codable {
        init() {}

        var connectTimeout: Double = 15
        var stallTimeout: Double = 30
        var maxRedirects: Int = 10
        var insecure = false
        var userAgent = "haul/\(HaulVersion.string)"
        var maxReceiveRate: Int64?
        var proxy: String?
        var noProxy: String?
        var caCertificates: String?
        var caDirectory: String?
        var interface: String?
        var ipVersion: IPVersion?
        var httpVersion: HTTPVersion?
        var user: String?
        var password: String?
        var netrc = false
        var netrcFile: String?
        var cookieFile: String?
        var cookieJar: String?
        var sslRequired = false
        var sshHostKey: String?

        private enum CodingKeys: String, CodingKey {
            case connectTimeout, stallTimeout, maxRedirects, insecure, userAgent, maxReceiveRate, proxy, noProxy,
                caCertificates, caDirectory, interface, ipVersion, httpVersion, user, password, netrc, netrcFile,
                cookieFile, cookieJar, sslRequired, sshHostKey
        }

        /// Options missing from a stored or sent job (an older haul's) take their defaults.
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let defaults = Values()
            connectTimeout = try container.decodeIfPresent(Double.self, forKey: .connectTimeout) ?? defaults.connectTimeout
            stallTimeout = try container.decodeIfPresent(Double.self, forKey: .stallTimeout) ?? defaults.stallTimeout
            maxRedirects = try container.decodeIfPresent(Int.self, forKey: .maxRedirects) ?? defaults.maxRedirects
            insecure = try container.decodeIfPresent(Bool.self, forKey: .insecure) ?? defaults.insecure
            userAgent = try container.decodeIfPresent(String.self, forKey: .userAgent) ?? defaults.userAgent
            maxReceiveRate = try container.decodeIfPresent(Int64.self, forKey: .maxReceiveRate)
            proxy = try container.decodeIfPresent(String.self, forKey: .proxy)
            noProxy = try container.decodeIfPresent(String.self, forKey: .noProxy)
            caCertificates = try container.decodeIfPresent(String.self, forKey: .caCertificates)
            caDirectory = try container.decodeIfPresent(String.self, forKey: .caDirectory)
            interface = try container.decodeIfPresent(String.self, forKey: .interface)
            ipVersion = try container.decodeIfPresent(IPVersion.self, forKey: .ipVersion)
            httpVersion = try container.decodeIfPresent(HTTPVersion.self, forKey: .httpVersion)
            user = try container.decodeIfPresent(String.self, forKey: .user)
            password = try container.decodeIfPresent(String.self, forKey: .password)
            netrc = try container.decodeIfPresent(Bool.self, forKey: .netrc) ?? false
            netrcFile = try container.decodeIfPresent(String.self, forKey: .netrcFile)
            cookieFile = try container.decodeIfPresent(String.self, forKey: .cookieFile)
            cookieJar = try container.decodeIfPresent(String.self, forKey: .cookieJar)
            sslRequired = try container.decodeIfPresent(Bool.self, forKey: .sslRequired) ?? false
            sshHostKey = try container.decodeIfPresent(String.self, forKey: .sshHostKey)
        }
    }

    private final class Box: Sendable {
        let values: Values
        init(_ values: Values) { self.values = values }
    }

    private var box: Box
    private var values: Values {
        get { box.values }
        set { box = Box(newValue) }
    }

    /// Seconds allowed to establish the connection.
    package var connectTimeout: Double {
        get { box.values.connectTimeout }
        set { values.connectTimeout = newValue }
    }
    /// A transfer that receives no bytes for this many seconds fails with a network error.
    package var stallTimeout: Double {
        get { box.values.stallTimeout }
        set { values.stallTimeout = newValue }
    }
    package var maxRedirects: Int {
        get { box.values.maxRedirects }
        set { values.maxRedirects = newValue }
    }
    /// Skip TLS certificate and host verification.
    package var insecure: Bool {
        get { box.values.insecure }
        set { values.insecure = newValue }
    }
    package var userAgent: String {
        get { box.values.userAgent }
        set { values.userAgent = newValue }
    }
    /// Receive cap in bytes per second: for the download, all its connections together, when it runs in a
    /// `DownloadManager` (its live `ReceiveLimit` starts from it); else for this transfer. nil = none.
    package var maxReceiveRate: Int64? {
        get { box.values.maxReceiveRate }
        set { values.maxReceiveRate = newValue }
    }
    /// The proxy for this download, `[SCHEME://][USER:PASSWORD@]HOST[:PORT]` as curl takes it (http, https,
    /// socks5h...); nil = the environment's (`http_proxy`...), "" = none.
    package var proxy: String? {
        get { box.values.proxy }
        set { values.proxy = newValue }
    }
    /// Hosts reached without the proxy: a comma-separated list, `*` for all (`--noproxy`).
    package var noProxy: String? {
        get { box.values.noProxy }
        set { values.noProxy = newValue }
    }
    /// PEM file of the certificate authorities to trust instead of the system's (`--cacert`).
    package var caCertificates: String? {
        get { box.values.caCertificates }
        set { values.caCertificates = newValue }
    }
    /// Directory of hashed CA certificates (`--capath`).
    package var caDirectory: String? {
        get { box.values.caDirectory }
        set { values.caDirectory = newValue }
    }
    /// The interface name, address or host name to send from (`--interface`).
    package var interface: String? {
        get { box.values.interface }
        set { values.interface = newValue }
    }
    package var ipVersion: IPVersion? {
        get { box.values.ipVersion }
        set { values.ipVersion = newValue }
    }
    package var httpVersion: HTTPVersion? {
        get { box.values.httpVersion }
        set { values.httpVersion = newValue }
    }
    /// The login of `--user USER[:PASSWORD]`, sent with HTTP Basic authentication (to the URL's host only:
    /// never to another host after a redirect).
    package var user: String? {
        get { box.values.user }
        set { values.user = newValue }
    }
    /// Its password. Never stored: the service's queue withholds it (a restarted service cannot go on and
    /// says so), and it is in no file, line or event haul writes.
    package var password: String? {
        get { box.values.password }
        set { values.password = newValue }
    }
    /// Look the login up in a netrc file (`--netrc`: `~/.netrc`; `--netrc-file FILE`).
    package var netrc: Bool {
        get { box.values.netrc }
        set { values.netrc = newValue }
    }
    package var netrcFile: String? {
        get { box.values.netrcFile }
        set { values.netrcFile = newValue }
    }
    /// Netscape cookies.txt to send cookies from (`--load-cookies`), and to write the cookies to when a
    /// transfer ends (`--save-cookies`).
    package var cookieFile: String? {
        get { box.values.cookieFile }
        set { values.cookieFile = newValue }
    }
    package var cookieJar: String? {
        get { box.values.cookieJar }
        set { values.cookieJar = newValue }
    }

    /// `ftp://` must upgrade to TLS (AUTH TLS) for its login and its data, or fail (`--ssl-reqd`, as curl's).
    /// `ftps://` is TLS from the first byte whatever this says.
    package var sslRequired: Bool {
        get { box.values.sslRequired }
        set { values.sslRequired = newValue }
    }
    /// The one SSH host key (`SHA256:BASE64`, as `ssh-keygen -l` prints it) that an `sftp://` or `scp://`
    /// server may have, in place of `~/.ssh/known_hosts`'s say (`--ssh-host-key`). Nothing accepts any key.
    package var sshHostKey: String? {
        get { box.values.sshHostKey }
        set { values.sshHostKey = newValue }
    }

    package enum IPVersion: String, Sendable, Codable { case v4, v6 }
    package enum HTTPVersion: String, Sendable, Codable { case http1_1, http2 }

    package init() {
        box = Box(Values())
    }

    /// Options missing from a stored or sent job (an older haul's) take their defaults.
    package init(from decoder: any Decoder) throws {
        box = Box(try Values(from: decoder))
    }

    package func encode(to encoder: any Encoder) throws {
        try box.values.encode(to: encoder)
    }

    package static func == (a: TransferOptions, b: TransferOptions) -> Bool {
        a.box === b.box || a.box.values == b.box.values
    }

    /// The longest timeout anything takes, 30 days; the command line refuses more.
    package static let maxSeconds: Double = 2_592_000

    /// `seconds` as whole milliseconds for curl and the stall timer, never trapping whatever the value
    /// (the command line range-checks, this is the second line): at least 1 ms, at most `maxSeconds`;
    /// NaN and infinity give `maxSeconds`.
    package static func milliseconds(_ seconds: Double) -> Int {
        let ceiling = Int(maxSeconds * 1000)
        guard seconds.isFinite else { return ceiling }
        let milliseconds = (seconds * 1000).rounded(.up)
        if milliseconds >= Double(ceiling) { return ceiling }
        return milliseconds < 1 ? 1 : Int(milliseconds)
    }
}
