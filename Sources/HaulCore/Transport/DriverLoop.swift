import CCurl

/// The driver thread's own state. Created, used and dropped on that thread only.
final class DriverLoop {
    let multi: UnsafeMutableRawPointer
    unowned let driver: CurlDriver
    /// Every easy handle added and not yet removed (this keeps it and its transfer alive), by its pointer
    /// (for curl's messages) and by its transfer (for the commands of other threads).
    var handles: [UnsafeMutableRawPointer: CurlHandle] = [:]
    var byTransfer: [ObjectIdentifier: CurlHandle] = [:]
    /// Easy handles of ended transfers, reset to curl's defaults, for the next ones: `curl_easy_init` and
    /// `curl_easy_cleanup` were 15,000 instructions a transfer (a tenth of the curl thread's own work for a
    /// small file). A reset handle keeps only what curl keeps across `curl_easy_reset` (its TLS session
    /// cache, its DNS cache): no option, no header, no credential. A handle that ran the cookie engine is
    /// never kept, since it would keep its cookies, and its cleanup is what writes a `--save-cookies` jar.
    var spareEasy: [UnsafeMutableRawPointer] = []
    static let sparesKept = 16
    var shuttingDown = false
    var overallRate: Int64?

    // The bookkeeping of transfers not started yet, kept up by `DriverLoop+Waiting.swift`. Its times are the
    // curl thread's own (`TransferInstant`), not a download's: this thread waits in curl_multi_poll, which
    // only real time ends.

    /// When connections were last opened ahead to each origin (`CurlDriver.start(_:clock:openingAhead:)`).
    var openedAhead: [String: TransferInstant] = [:]
    /// Connections opened ahead whose HEAD has not ended yet, by origin.
    var aheadRunning: [String: Int] = [:]
    /// Transfers on connections of their own that wait for one of those (a segment started before a HEAD's
    /// answer came), by origin, with when they began to wait: at most N connections for `-s N`, never one
    /// of their own beside an opened one.
    var waitingForAhead: [String: [(core: TransferCore, since: TransferInstant)]] = [:]
    /// Transfers that start once another has ended (`CurlDriver.start(_:clock:after:)`), by that one.
    var following: [ObjectIdentifier: TransferCore] = [:]

    /// Connections in three pools, by what they carry, so that no transfer ever looks at a connection of
    /// another kind: libcurl 7.88 (Debian 12's) lets a transfer that may multiplex take a busy HTTP/1.1
    /// connection of its host once another connection to that host has spoken HTTP/2 (`ConnectionExists`
    /// checks the host's state, not the connection's: fixed in curl 8.5.0). Two requests then rode one
    /// HTTP/1.1 connection and each transfer read whichever answer came first: files of one size swapped
    /// their contents and were named as done, others failed "received HTTP/0.9". HTTP/1.1 and HTTP/2
    /// transfers to one host run side by side wherever a download alone on its host (HTTP/1.1), `-s N`'s
    /// segments or a `--http1.1` job meets downloads sharing an HTTP/2 connection: the service, where
    /// downloads come and go, met it in most runs of a thousand small files.
    ///
    /// - `soloPool` (a curl share of connections): transfers on HTTP/1.1 by haul's choice; none of them may
    ///   multiplex, so none takes a busy connection.
    /// - `cleartextPool`: `--http2` on `http://` (h2c), whose connections may multiplex where plain
    ///   `http://` ones never do.
    /// - the multi handle's own: the rest, which take what the server negotiates (HTTP/2 over TLS where
    ///   offered, HTTP/1.1 otherwise: one host's connections are then all of one kind).
    let soloPool: UnsafeMutableRawPointer
    let cleartextPool: UnsafeMutableRawPointer

    init(multi: UnsafeMutableRawPointer, driver: CurlDriver) {
        self.multi = multi
        self.driver = driver
        func pool() -> UnsafeMutableRawPointer {
            guard let share = curl_share_init() else { fatalError("curl_share_init failed: out of memory") }
            // Used by the curl thread alone: no lock functions.
            haul_share_setopt_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_CONNECT.rawValue))
            return share
        }
        soloPool = pool()
        cleartextPool = pool()
    }

    /// The pool of a transfer's connections (see `soloPool`): a share, or nil for the multi handle's own.
    func pool(for request: HTTPRequest) -> UnsafeMutableRawPointer? {
        switch request.options.httpVersion {
        case .http1_1: soloPool
        case .http2: request.isHTTPS ? nil : cleartextPool
        // A connection of its own asks HTTP/1.1 (`CurlHandle.configure`).
        case nil: request.ownConnection ? soloPool : nil
        }
    }

    func run() {
        while true {
            for command in driver.takeCommands() { handle(command) }
            if shuttingDown {
                // The waiting ones first: a HEAD's end would start them.
                endWaiting(error: HaulError(.cancelled, "the transfer engine stopped"))
                for handle in handles.values { close(handle, error: HaulError(.cancelled, "the transfer engine stopped")) }
                for easy in spareEasy { curl_easy_cleanup(easy) }
                spareEasy = []
                // Every easy handle is gone: the pool closes its connections.
                curl_share_cleanup(soloPool)
                curl_share_cleanup(cleartextPool)
                break
            }
            startOverdue()
            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            collectFinished()
            // Bytes below a batch's threshold wait for a consumer at most a few tens of milliseconds. On the
            // continuous clock, not a download's: this thread waits in curl_multi_poll, which real time ends.
            let now = TransferInstant.now
            var pending = false
            for handle in handles.values where handle.core.flushIfDue(now: now) { pending = true }
            // Sleeps until a socket is ready, a curl timer is due, a paced transfer may go on, or another thread
            // posts a command.
            var timeout = pending ? 5 : !waitingForAhead.isEmpty ? 100 : handles.isEmpty ? 60_000 : 1_000
            if let next = resumePaced(now: now) {
                let milliseconds = (next.nanoseconds - now.nanoseconds + 999_999) / 1_000_000
                timeout = Swift.min(timeout, Int(Swift.max(1, milliseconds)))
            }
            if driver.willPoll() {
                curl_multi_poll(multi, nil, 0, Int32(timeout), nil)
                driver.didPoll()
            }
        }
        driver.threadDidExit()
    }

    private func handle(_ command: CurlDriver.Command) {
        switch command {
        case .add(let core, let ahead):
            add(core)
            if ahead > 0 { openAhead(beside: core, connections: ahead) }
        case .addAfter(let core, let previous):
            follow(core, after: previous)
        case .unpause(let core):
            if let handle = byTransfer[ObjectIdentifier(core)] {
                handle.pausedForConsumer = false
                handle.noteActivity()
                // Held by the pacer instead: it resumes the transfer when its time comes.
                if handle.pacedUntil == nil { curl_easy_pause(handle.easy, CURLPAUSE_CONT) }
            }
        case .remove(let core):
            if let handle = byTransfer[ObjectIdentifier(core)] {
                close(handle, error: HaulError(.cancelled, "cancelled"))
            } else {
                withdraw(core)
            }
        case .overallRate(let rate):
            overallRate = rate
            rebalance()
        case .rebalance:
            rebalance()
        case .shutdown:
            shuttingDown = true
        }
    }

    /// Starts a transfer on an easy handle of its own (a spare when one is kept), unless it is to wait for a
    /// connection opened ahead (`waitsForAhead`): `ahead` for such a HEAD itself, `waited` for one that has
    /// waited already.
    func add(_ core: TransferCore, ahead: Bool = false, waited: Bool = false) {
        if !ahead, !waited, waitsForAhead(core) { return }
        guard let easy = spareEasy.popLast() ?? curl_easy_init() else {
            end(core, error: HaulError(.other, "out of memory starting a transfer"))
            return
        }
        let handle = CurlHandle(core: core, easy: easy, observer: driver.observer, ahead: ahead)
        handle.configure(pool: pool(for: core.request))
        handles[easy] = handle
        byTransfer[ObjectIdentifier(core)] = handle
        rebalance()
        handle.added = true
        let code = curl_multi_add_handle(multi, easy)
        if code != CURLM_OK {
            close(handle, error: HaulError(.other, String(cString: curl_multi_strerror(code))))
        }
    }

    private func collectFinished() {
        var queued: Int32 = 0
        while let message = curl_multi_info_read(multi, &queued) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                let handle = handles[easy]
            else { continue }
            let code = haul_msg_result(message)
            var error: HaulError?
            if code == CURLE_ABORTED_BY_CALLBACK && handle.stalled {
                let limit = handle.core.request.options.stallTimeout
                let seconds = ByteFormat.fixed(limit, limit < 10 && limit != limit.rounded() ? 1 : 0)
                error = HaulError.stalled(seconds: seconds)
            } else if code != CURLE_OK {
                switch handle.remote == nil ? .asCurlSays : handle.remoteEnding(code) {
                case .success:
                    break
                case .failure(let failure):
                    error = failure
                case .asCurlSays:
                    var osErrno = 0
                    _ = haul_easy_getinfo_long(easy, CURLINFO_OS_ERRNO, &osErrno)
                    error = HaulError(curlCode: code, detail: String(cString: handle.errorBuffer), osErrno: Int32(osErrno))
                }
            }
            close(handle, error: error)
        }
    }

    /// Ends a transfer: removes and frees the curl handle, then tells its consumer. In that order because
    /// `curl_easy_cleanup` is what writes a `--save-cookies` jar: a consumer told first could end the
    /// process before the jar exists.
    func close(_ handle: CurlHandle, error: HaulError?) {
        if error == nil { handle.deliverHeadIfPending() }
        curl_multi_remove_handle(multi, handle.easy)
        let options = handle.core.request.options
        // Kept for the next transfer only when this one ended whole and was never paused: a transfer
        // removed while another still used its HTTP/2 connection left in the handle (libcurl 7.88,
        // `multi_done` returning early while the connection is in use) the chunk it held while paused, and
        // `curl_easy_reset` does not clear it, so the handle's next transfer got those bytes when its own
        // pause ended: a cancelled download's bytes at the start of the next one's (a file failed "sent more
        // than it announced", a segment's range shifted and named done).
        if error == nil, !handle.everPaused, options.cookieFile == nil, options.cookieJar == nil,
           spareEasy.count < Self.sparesKept {
            curl_easy_reset(handle.easy)
            spareEasy.append(handle.easy)
        } else {
            curl_easy_cleanup(handle.easy)
        }
        handles[handle.easy] = nil
        byTransfer[ObjectIdentifier(handle.core)] = nil
        rebalance()
        handle.core.finish(error)
        handle.free()
        handle.core.markClosed()
        handle.observer?(ObjectIdentifier(handle.core), .closed)
        if handle.ahead { aheadEnded(CurlDriver.origin(of: handle.core.request)) }
        startFollower(of: handle.core, after: error)
    }
}
