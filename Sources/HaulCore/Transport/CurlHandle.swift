import CCurl

/// One easy handle and what only the curl thread knows about it. Created, used and freed on that thread:
/// the callbacks get it as their user data, and `DriverLoop` keeps it alive until the handle is removed.
final class CurlHandle {
    let core: TransferCore
    let easy: UnsafeMutableRawPointer
    let errorBuffer: UnsafeMutablePointer<CChar>
    var headerList: UnsafeMutablePointer<curl_slist>?
    let observer: TransferObserver?
    /// When bytes (head or body) last arrived, or the consumer last let the transfer go on.
    var lastActivity: Duration
    /// Paused because the consumer is behind: not the network's fault, so not a stall.
    var pausedForConsumer = false
    /// The write callback has refused a chunk at least once (the pacer or the consumer): curl holds such a
    /// chunk in the easy handle until the transfer goes on, and libcurl 7.88 does not always let go of it
    /// (see `close`).
    var everPaused = false
    /// The stall check aborted the transfer.
    var stalled = false
    /// How long without bytes is a stall; nil: never (a timeout of 0, or a NaN that got this far). Made once:
    /// the check runs at every progress callback.
    let stallLimit: Duration?
    /// The head has been handed over (or failed); saves a lock per chunk.
    var headSeen = false
    /// The receive cap in force (0: none), and what keeps the transfer to it.
    var appliedRate: Int64 = 0
    var pacer: ReceivePacer?
    /// Paused by the pacer until then: the held chunk is taken once the driver resumes the transfer.
    var pacedUntil: TransferInstant?
    /// Added to the multi handle: curl's buffer size is set for good.
    var added = false
    /// curl's receive buffer for this transfer (`CURLOPT_BUFFERSIZE`), which is also its largest chunk.
    var bufferSize: Int
    /// The largest buffer for this transfer's protocol (`IOBuffer.largestChunk(for:)`), which an uncapped
    /// transfer keeps.
    let largestChunk: Int
    /// A HEAD that only opens a connection ahead of need (`CurlDriver.start(_:clock:openingAhead:)`): no body,
    /// no share of a cap.
    let ahead: Bool
    /// FTP, SFTP or SCP; nil over HTTP. Such a transfer has no HTTP head: haul makes one (`remoteFileHead`).
    let remote: HTTPRequest.RemoteFileProtocol?
    /// Bytes still to deliver of a bounded range over FTP or SFTP, asked for to the file's end so that
    /// libcurl says the file's size (`setRemoteFileRange`); nil when the transfer is not cut short.
    var rangeLeft: Int64?
    /// The transfer was ended at the end of its range: the write error libcurl then reports is a success.
    var cutAtRangeEnd = false
    /// Why the SSH host key was refused (`hostKeyCallback`), for the one-line error.
    var hostKeyRefusal: HaulError?

    init(core: TransferCore, easy: UnsafeMutableRawPointer, observer: TransferObserver?, ahead: Bool) {
        self.core = core
        remote = core.request.remoteFileProtocol
        largestChunk = IOBuffer.largestChunk(for: remote)
        bufferSize = largestChunk
        self.easy = easy
        self.observer = observer
        self.ahead = ahead
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        lastActivity = core.activityClock.time(at: TransferInstant.now)
        let limit = core.request.options.stallTimeout
        stallLimit = limit > 0 ? .milliseconds(TransferOptions.milliseconds(limit)) : nil
    }

    /// Frees what curl no longer uses once the easy handle is cleaned up.
    func free() {
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
        errorBuffer.deallocate()
    }

    /// Something happened that is not a stall: bytes arrived, or the consumer let the transfer go on.
    func noteActivity(at now: TransferInstant = TransferInstant.now) {
        lastActivity = core.activityClock.time(at: now)
    }

    func headerLine(_ line: UnsafeRawBufferPointer) {
        noteActivity()
        // An FTP server's replies come here too: they are no HTTP header, and haul makes that head itself.
        if remote == nil { core.headerLine(line) }
    }

    /// The write callback: the return value goes back to curl.
    func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
        if let rangeLeft { return receive(bytes, upTo: rangeLeft) }
        return receiveWhole(bytes)
    }

    /// `receive` for a chunk with no range end in it.
    func receiveWhole(_ bytes: UnsafeRawBufferPointer) -> Int {
        let now = TransferInstant.now
        noteActivity(at: now)
        deliverHeadIfPending(bodyless: false)
        if !bytes.isEmpty, case .wait(let until)? = pacer?.admit(bytes.count, at: now) {
            pacedUntil = until
            everPaused = true
            return Int(haul_writefunc_pause())
        }
        switch core.receive(bytes, now: now) {
        case .deliver, .deliverHead, .buffered:
            return bytes.count
        case .pause:
            pausedForConsumer = true
            everPaused = true
            observer?(ObjectIdentifier(core), .paused(count: core.pauseCount))
            return Int(haul_writefunc_pause())
        case .abort:
            return 0
        }
    }

    /// Called at least once a second (the progress callback); true aborts a transfer that received
    /// nothing for longer than its stall timeout.
    func isStalled() -> Bool {
        let now = core.activityClock.time(at: TransferInstant.now)
        guard let stallLimit, !pausedForConsumer, pacedUntil == nil else {
            lastActivity = now
            return false
        }
        stalled = now - lastActivity > stallLimit
        return stalled
    }

    /// Hands the head to its waiter at the first body byte, or at the end of a bodiless answer.
    func deliverHeadIfPending(bodyless: Bool = true) {
        guard !headSeen else { return }
        headSeen = true
        guard core.isHeadPending else { return }
        if remote != nil {
            core.headArrived(remoteFileHead(bodyless: bodyless))
            return
        }
        var status = 0
        haul_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        var urlPointer: UnsafeMutablePointer<CChar>?
        haul_easy_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &urlPointer)
        core.headArrived(status: status, effectiveURL: urlPointer.map { String(cString: $0) } ?? core.request.url)
    }
}

// MARK: Setup

extension CurlHandle {
    /// Sets the transfer's options on its easy handle (a new one, or a spare reset to curl's defaults), with its
    /// connections in `pool` (`DriverLoop.pool(for:)`), and makes this record the callbacks' user data.
    func configure(pool: UnsafeMutableRawPointer?) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        setTransferOptions(pool: pool, userData: me)
        setRequestOptions()
        setCallbacks(userData: me)
    }

    /// A String passed where C takes a pointer is first copied into a new array (two allocations a file
    /// for the URL and the user agent alone); through `withCString` a native string is passed in place.
    func setString(_ option: CURLoption, _ value: String) {
        _ = value.withCString { haul_easy_setopt_string(easy, option, $0) }
    }

    /// Where the transfer goes and over what: its URL and redirects, timeouts, TLS, proxy, interface, IP and
    /// HTTP versions, and its pool of connections.
    private func setTransferOptions(pool: UnsafeMutableRawPointer?, userData me: UnsafeMutableRawPointer) {
        let request = core.request
        let options = request.options
        setString(CURLOPT_URL, request.url)
        // Redirects stay on HTTP: a web server's answer never sends haul to an FTP or SSH server (with the
        // user's credentials or known hosts), whatever it says.
        haul_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https,ftp,ftps,sftp,scp")
        haul_easy_setopt_string(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        if let remote { setRemoteFileOptions(remote, userData: me) }
        haul_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        haul_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 1)
        haul_easy_setopt_long(easy, CURLOPT_MAXREDIRS, options.maxRedirects)
        haul_easy_setopt_long(easy, CURLOPT_BUFFERSIZE, largestChunk)
        haul_easy_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1)
        haul_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, TransferOptions.milliseconds(options.connectTimeout))
        haul_easy_setopt_long(easy, CURLOPT_NOPROGRESS, 0)
        haul_easy_setopt_xferinfo(easy, progressCallback)
        haul_easy_setopt_ptr(easy, CURLOPT_XFERINFODATA, me)
        if options.insecure {
            haul_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 0)
            haul_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 0)
        }
        setString(CURLOPT_USERAGENT, options.userAgent)
        if let proxy = options.proxy { setString(CURLOPT_PROXY, proxy) }
        if let noProxy = options.noProxy { setString(CURLOPT_NOPROXY, noProxy) }
        if let file = options.caCertificates { setString(CURLOPT_CAINFO, file) }
        if let directory = options.caDirectory { setString(CURLOPT_CAPATH, directory) }
        if let interface = options.interface { setString(CURLOPT_INTERFACE, interface) }
        switch options.ipVersion {
        case .v4: haul_easy_setopt_long(easy, CURLOPT_IPRESOLVE, Int(CURL_IPRESOLVE_V4))
        case .v6: haul_easy_setopt_long(easy, CURLOPT_IPRESOLVE, Int(CURL_IPRESOLVE_V6))
        case nil: break
        }
        switch options.httpVersion {
        case .http1_1: haul_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1))
        case .http2:
            haul_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2_0))
            // HTTP/2 as asked, on a connection of its own: never a stream beside another segment's.
            if request.ownConnection { haul_easy_setopt_long(easy, CURLOPT_FRESH_CONNECT, 1) }
        case nil:
            // HTTP/1.1 connections are never shared by two transfers at once; an HTTP/2 one would be.
            if request.ownConnection { haul_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1)) }
        }
        // Set at each use: a spare handle keeps the pool it last had (`curl_easy_reset` leaves it).
        haul_easy_setopt_ptr(easy, CURLOPT_SHARE, pool)
        // Several downloads from one HTTPS host: streams of one HTTP/2 connection (when the server speaks
        // it) instead of a TLS handshake each.
        if !request.ownConnection, request.isHTTPS {
            haul_easy_setopt_long(easy, CURLOPT_PIPEWAIT, 1)
        }
    }

    /// What the request says: credentials, cookies, method and body, range and headers.
    private func setRequestOptions() {
        let request = core.request
        let options = request.options
        if let user = options.user {
            setString(CURLOPT_USERNAME, user)
            setString(CURLOPT_PASSWORD, options.password ?? "")
            haul_easy_setopt_long(easy, CURLOPT_HTTPAUTH, haul_curlauth_basic())
        }
        if options.netrc || options.netrcFile != nil {
            haul_easy_setopt_long(easy, CURLOPT_NETRC, Int(CURL_NETRC_OPTIONAL.rawValue))
            if let file = options.netrcFile { setString(CURLOPT_NETRC_FILE, file) }
        }
        if let file = options.cookieFile { setString(CURLOPT_COOKIEFILE, file) }
        if let jar = options.cookieJar {
            // A jar also starts the cookie engine, so cookies set during redirects are sent on.
            if options.cookieFile == nil { haul_easy_setopt_string(easy, CURLOPT_COOKIEFILE, "") }
            setString(CURLOPT_COOKIEJAR, jar)
        }
        if request.method == .head { haul_easy_setopt_long(easy, CURLOPT_NOBODY, 1) }
        if request.method == .post {
            let body = request.body ?? []
            haul_easy_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
            // Copied by curl: the request's array need not outlive this call.
            body.withUnsafeBufferPointer { buffer in
                _ = buffer.baseAddress.map { haul_easy_setopt_ptr(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: $0)) }
            }
            if body.isEmpty { haul_easy_setopt_string(easy, CURLOPT_COPYPOSTFIELDS, "") }
        }
        if let socket = request.unixSocketPath { setString(CURLOPT_UNIX_SOCKET_PATH, socket) }
        if remote != nil {
            setRemoteFileRange()
        } else if let range = request.curlRange {
            setString(CURLOPT_RANGE, range)
        }

        var headers = request.headers
        if let validator = request.ifRange { headers.append("If-Range: \(validator)") }
        var list: UnsafeMutablePointer<curl_slist>?
        for header in headers { list = header.withCString { curl_slist_append(list, $0) } }
        headerList = list
        if let list { haul_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, list) }
    }

    private func setCallbacks(userData me: UnsafeMutableRawPointer) {
        haul_easy_setopt_ptr(easy, CURLOPT_ERRORBUFFER, errorBuffer)
        haul_easy_setopt_ptr(easy, CURLOPT_PRIVATE, me)
        haul_easy_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION, writeCallback)
        haul_easy_setopt_ptr(easy, CURLOPT_WRITEDATA, me)
        haul_easy_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION, headerCallback)
        haul_easy_setopt_ptr(easy, CURLOPT_HEADERDATA, me)
    }
}

// MARK: Callbacks

private let writeCallback: haul_data_callback = { data, size, count, userdata in
    let handle = Unmanaged<CurlHandle>.fromOpaque(userdata!).takeUnretainedValue()
    return handle.receive(UnsafeRawBufferPointer(start: data, count: size * count))
}

private let headerCallback: haul_data_callback = { data, size, count, userdata in
    let handle = Unmanaged<CurlHandle>.fromOpaque(userdata!).takeUnretainedValue()
    handle.headerLine(UnsafeRawBufferPointer(start: data, count: size * count))
    return size * count
}

private let progressCallback: haul_xferinfo_callback = { userdata, _, _, _, _ in
    let handle = Unmanaged<CurlHandle>.fromOpaque(userdata!).takeUnretainedValue()
    return handle.isStalled() ? 1 : 0
}
