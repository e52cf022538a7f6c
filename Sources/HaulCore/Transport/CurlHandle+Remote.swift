import CCurl
import FoundationEssentials
import Glibc

// FTP, FTPS, SFTP and SCP: what a transfer that is not HTTP sets on its easy handle, the head haul makes for
// it, and how its end reads.

extension CurlHandle {
    /// Options of the protocol: the file's modification time asked for (the validator an HTTP server would
    /// send), FTP's TLS, and SSH's host key check and logins.
    func setRemoteFileOptions(_ remote: HTTPRequest.RemoteFileProtocol, userData me: UnsafeMutableRawPointer) {
        let options = core.request.options
        // MDTM over FTP, the file's attributes over SFTP: `remoteFileHead` makes the validator of it.
        haul_easy_setopt_long(easy, CURLOPT_FILETIME, 1)
        if remote == .ftp, options.sslRequired {
            // `ftp://` upgraded with AUTH TLS, control and data, or no transfer (`ftps://` is TLS from the start).
            haul_easy_setopt_long(easy, CURLOPT_USE_SSL, Int(CURLUSESSL_ALL.rawValue))
        }
        guard remote.overSSH else { return }
        haul_easy_setopt_long(easy, CURLOPT_SSH_AUTH_TYPES, haul_curlssh_auth_any())
        let files = SSHFiles()
        setString(CURLOPT_SSH_KNOWNHOSTS, files.knownHosts)
        if let key = options.sshHostKey {
            // Exactly this key; libcurl then skips known_hosts. It compares the base64 text without padding.
            setString(CURLOPT_SSH_HOST_PUBLIC_KEY_SHA256, SSHFiles.bareFingerprint(key))
        } else {
            // A key known_hosts does not hold, or holds another for the host, is refused, never added.
            haul_easy_setopt_sshkey(easy, hostKeyCallback)
            haul_easy_setopt_ptr(easy, CURLOPT_SSH_KEYDATA, me)
        }
        // libcurl alone would try ~/.ssh/id_rsa and id_dsa only, then the same names in the current directory.
        // OpenSSH's order instead, in ~/.ssh only; "" when there is none (the agent and passwords remain).
        setString(CURLOPT_SSH_PRIVATE_KEYFILE, files.privateKey ?? "")
        // As ssh does, the local login name when neither the URL nor --user nor a netrc file names one.
        if options.user == nil, !options.netrc, !SSHFiles.hasUser(core.request.url), let login = SSHFiles.loginName() {
            setString(CURLOPT_USERNAME, login)
        }
    }

    /// The range over FTP or SFTP: asked for to the end of the file, whose size libcurl then reports as what
    /// is left of it (it reports only the range's length for a bounded range), and cut at the range's end
    /// here (`receive(_:upTo:)`). SCP cannot seek: it sends the whole file, and its head says so.
    func setRemoteFileRange() {
        guard remote != .scp, let range = core.request.range else { return }
        setString(CURLOPT_RANGE, "\(range.first)-")
        if let last = range.last { rangeLeft = last - range.first + 1 }
    }

    /// A chunk of a bounded range: what lies past the range's end is not delivered, and the transfer ends there.
    func receive(_ bytes: UnsafeRawBufferPointer, upTo left: Int64) -> Int {
        guard left > 0 else {
            cutAtRangeEnd = true
            return 0
        }
        guard Int64(bytes.count) > left else {
            let taken = receiveWhole(bytes)
            if taken == bytes.count { rangeLeft = left - Int64(taken) }
            return taken
        }
        let kept = UnsafeRawBufferPointer(rebasing: bytes[..<Int(left)])
        let taken = receiveWhole(kept)
        // A pause (or an abort) for the kept bytes: curl offers the whole chunk again when the transfer goes on.
        guard taken == kept.count else { return taken }
        rangeLeft = 0
        cutAtRangeEnd = true
        return 0
    }

    /// The head of this transfer, from what libcurl learnt before its first byte (or at its end).
    func remoteFileHead(bodyless: Bool, pastEnd: Bool = false) -> ResponseHead {
        var length: curl_off_t = -1
        var modified: curl_off_t = -1
        haul_easy_getinfo_off(easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length)
        haul_easy_getinfo_off(easy, CURLINFO_FILETIME_T, &modified)
        let request = core.request
        let facts = ResponseHead.RemoteFileFacts(
            seeks: remote != .scp, rangeFirst: request.range?.first, rangeLast: request.range?.last,
            length: length >= 0 ? Int64(length) : nil, modified: modified >= 0 ? Int64(modified) : nil,
            bodyless: bodyless, pastEnd: pastEnd)
        return ResponseHead.remoteFile(facts, url: request.url)
    }

    /// How haul ends a transfer over FTP, SFTP or SCP that libcurl ended with `code` (not `CURLE_OK`).
    enum RemoteEnding {
        /// It ended well after all.
        case success
        case failure(HaulError)
        /// As libcurl's code says (`HaulError(curlCode:)`).
        case asCurlSays
    }

    func remoteEnding(_ code: CURLcode) -> RemoteEnding {
        switch code {
        case CURLE_WRITE_ERROR where cutAtRangeEnd:
            return .success
        case CURLE_BAD_DOWNLOAD_RESUME where !headSeen && core.isHeadPending:
            // The offset asked for lies past the file's end: what HTTP says with 416, and the download decides.
            headSeen = true
            core.headArrived(remoteFileHead(bodyless: true, pastEnd: true))
            return .success
        case CURLE_PEER_FAILED_VERIFICATION where remote?.overSSH ?? false:
            if let hostKeyRefusal { return .failure(hostKeyRefusal) }
            guard let key = core.request.options.sshHostKey else { return .asCurlSays }
            return .failure(HaulError(.tls, "the host key of \(SSHFiles.hostName(in: core.request.url)) is not the "
                                      + "\(SSHFiles.fingerprint(key)) that --ssh-host-key names", reason: .hostKeyMismatch))
        default:
            return .asCurlSays
        }
    }

    /// libcurl found the server's key missing from known_hosts, or another key there for the host.
    func refuseHostKey(_ found: curl_khkey, changed: Bool) {
        let host = SSHFiles.hostName(in: core.request.url)
        let fingerprint = SSHFiles.fingerprint(of: found) ?? "a key haul cannot read"
        let message = changed
            ? "the host key of \(host) has changed: it is now \(fingerprint), not the key ~/.ssh/known_hosts holds for it "
                + "(someone may be intercepting the connection; if the server's key was replaced, update ~/.ssh/known_hosts)"
            : "the host key of \(host) is not in ~/.ssh/known_hosts; \(fingerprint) — add it, or pass --ssh-host-key \(fingerprint)"
        hostKeyRefusal = HaulError(.tls, message, reason: changed ? .hostKeyChanged : .hostKeyUnknown)
    }
}

/// Called by libcurl with what known_hosts says of the server's key, a match included: a key it does not vouch
/// for is refused, always, and never added.
private let hostKeyCallback: curl_sshkeycallback = { _, _, found, match, userdata in
    if match == CURLKHMATCH_OK { return Int32(CURLKHSTAT_FINE.rawValue) }
    let handle = Unmanaged<CurlHandle>.fromOpaque(userdata!).takeUnretainedValue()
    if let found { handle.refuseHostKey(found.pointee, changed: match == CURLKHMATCH_MISMATCH) }
    return Int32(CURLKHSTAT_REJECT.rawValue)
}

/// The user's SSH files, as OpenSSH finds them: under `$HOME/.ssh` (the password database's home directory when
/// `HOME` is not set).
struct SSHFiles {
    let directory: String

    init() {
        let home = getenv("HOME").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? Self.passwordHome() ?? "/"
        directory = (home.hasSuffix("/") ? home : home + "/") + ".ssh"
    }

    var knownHosts: String { directory + "/known_hosts" }

    /// The first private key of OpenSSH's default identities that exists.
    var privateKey: String? {
        ["id_ed25519", "id_ecdsa", "id_rsa", "id_dsa"].lazy.map { directory + "/" + $0 }.first { access($0, R_OK) == 0 }
    }

    private static func passwordHome() -> String? {
        guard let entry = getpwuid(geteuid()), let home = entry.pointee.pw_dir else { return nil }
        return String(cString: home)
    }

    static func loginName() -> String? {
        guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return nil }
        return String(cString: name)
    }

    /// The URL names a user (`sftp://USER@HOST/...`).
    static func hasUser(_ url: String) -> Bool {
        guard let start = url.utf8.firstRange(of: "://".utf8)?.upperBound else { return false }
        let authority = url.utf8[start...].prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        return authority.contains(UInt8(ascii: "@"))
    }

    /// `HOST` or `HOST:PORT` of a URL, for a message (never its user or password).
    static func hostName(in url: String) -> String {
        guard let components = URLComponents(string: url), let host = components.encodedHost else { return url }
        return components.port.map { "\(host):\($0)" } ?? host
    }

    /// `SHA256:BASE64` as `ssh-keygen -l` prints it, of a key libcurl found.
    static func fingerprint(of key: curl_khkey) -> String? {
        guard let text = key.key else { return nil }
        let raw: [UInt8] = if key.len > 0 {
            Array(UnsafeRawBufferPointer(start: text, count: key.len))
        } else {
            Data(base64Encoded: String(cString: text)).map(Array.init) ?? []
        }
        guard !raw.isEmpty, let digest = DigestContext(.sha256) else { return nil }
        raw.withUnsafeBytes { digest.update($0) }
        guard let hex = digest.hex() else { return nil }
        var bytes: [UInt8] = []
        var high: UInt8?
        for character in hex.utf8 {
            let nibble = character <= UInt8(ascii: "9") ? character - UInt8(ascii: "0") : character - UInt8(ascii: "a") + 10
            if let value = high { bytes.append(value << 4 | nibble); high = nil } else { high = nibble }
        }
        return fingerprint(Data(bytes).base64EncodedString())
    }

    /// A fingerprint as OpenSSH writes it: `SHA256:` and base64 without padding.
    static func fingerprint(_ text: String) -> String { "SHA256:" + bareFingerprint(text) }

    /// The base64 of a fingerprint given as `SHA256:BASE64` (or bare), without its padding: what libcurl compares.
    static func bareFingerprint(_ text: String) -> String {
        var bare = Substring(text)
        if bare.hasPrefix("SHA256:") { bare = bare.dropFirst(7) }
        while bare.hasSuffix("=") { bare = bare.dropLast() }
        return String(bare)
    }
}

/// The fingerprint `--ssh-host-key` takes.
package enum SSHFingerprint {
    /// nil when `text` is `SHA256:` and the base64 of 32 bytes (its padding optional), as `ssh-keygen -l`
    /// prints a key's fingerprint; otherwise what is wrong, for a usage error.
    package static func problem(with text: String) -> String? {
        guard text.hasPrefix("SHA256:") else { return "is not SHA256:BASE64 (as ssh-keygen -l prints it)" }
        let bare = SSHFiles.bareFingerprint(text)
        guard bare.count == 43, let bytes = Data(base64Encoded: bare + "="), bytes.count == 32 else {
            return "is not the base64 of a SHA-256 digest (43 characters after SHA256:)"
        }
        return nil
    }
}
