import CCurl
import CLinux
import FoundationEssentials
import Glibc
import NIOConcurrencyHelpers

/// Owns one libcurl multi handle and every easy handle, on one thread of its own.
///
/// Other threads never touch curl: they post commands (`add`, `unpause`, `remove`) and, when it sleeps, wake
/// the thread with `curl_multi_wakeup`. While nothing happens the thread sleeps in `curl_multi_poll`: no busy
/// polling.
/// Connections are kept in the multi handle's cache and reused by later transfers to the same host.
package final class CurlDriver: Sendable {
    /// The process-wide driver. Its thread starts on first use and lives as long as the process.
    package static let shared = CurlDriver()

    /// Makes `shared` on a thread of its own (libcurl's load, OpenSSL's and curl's init, the multi handle and
    /// its thread), for a caller that will soon need it and has other work to do meanwhile. Where no thread
    /// can be started, `shared` is made where it is first needed, as without this.
    ///
    /// The load is the longest step of a download's start, so it comes first on that thread (after OpenSSL's
    /// keep-at-exit, which `globalInit` asks for before anything of curl's). The caller's thread meanwhile
    /// sets the locale's character type, which curl needs only for its first request, and loads OpenSSL's
    /// configuration, which curl's init would otherwise load after libcurl (0.4 of its 0.7 ms).
    package static func prepareInBackground() {
        detachThread {
            _ = haul_openssl_keep_at_exit()
            haul_curl_load()
            _ = shared
        }
        _ = characterType
        _ = haul_openssl_load_config()
    }

    enum Command {
        /// A transfer to start, and how many connections to open ahead beside it
        /// (`start(_:clock:openingAhead:)`).
        case add(TransferCore, openingAhead: Int)
        /// A transfer to start once `after` has ended (`start(_:clock:after:)`).
        case addAfter(TransferCore, after: TransferCore)
        case unpause(TransferCore)
        case remove(TransferCore)
        case overallRate(Int64?)
        case rebalance
        case shutdown
    }

    /// Bytes allowed to wait between curl and a slow consumer before the transfer is paused.
    let highWatermark: Int
    /// How long bytes below a batch's worth (and a small file's head, held for its body) wait for more before
    /// a waiting consumer is woken with them.
    let deliveryDelay: Duration
    private let multi: MultiHandle
    private let inbox = NIOLockedValueBox(Inbox())

    /// Commands posted and not taken yet, and whether the thread sleeps (or is about to) in
    /// `curl_multi_poll`: only then does a post wake it. A thread that is awake takes the commands at the top
    /// of its next turn, and each wake costs a write to curl's socket pair and two reads on this side.
    private struct Inbox {
        var commands: [Command] = []
        var polling = false
    }
    private let finished = Latch()

    /// A multi handle pointer; used only on the driver thread, apart from the thread-safe `curl_multi_wakeup`.
    private struct MultiHandle: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
    }

    /// Told of pauses and closes on the curl thread (tests); nil for the shared driver.
    let observer: TransferObserver?
    /// A transfer that waits for a connection opened ahead opens its own after this long. The HEAD began
    /// before the transfer asked, so waiting for it is never slower than a new connection's handshakes; this
    /// only bounds the wait behind a server that is slow to answer HEAD.
    let aheadPatience: Duration

    package init(highWatermark: Int = 1 << 20, deliveryDelay: Duration = .milliseconds(10),
                 aheadPatience: Duration = .seconds(5), observer: TransferObserver? = nil) {
        _ = CurlDriver.globalInit
        self.highWatermark = highWatermark
        self.deliveryDelay = deliveryDelay
        self.aheadPatience = aheadPatience
        self.observer = observer
        guard let pointer = curl_multi_init() else { fatalError("curl_multi_init failed: out of memory") }
        multi = MultiHandle(pointer: pointer)
        // Named from inside, so top and perf show it as curl's, not as its creator's.
        detachEssentialThread { [self] in
            haul_name_thread("haul-curl")
            DriverLoop(multi: multi.pointer, driver: self).run()
        }
    }

    private static let globalInit: Void = {
        _ = characterType
        // Before curl's init, which is OpenSSL's first: no cleanup at exit under a handshake still running.
        _ = haul_openssl_keep_at_exit()
        curl_global_init(Int(CURL_GLOBAL_ALL))
    }()

    /// `useUTF8CharacterType`, once: `setlocale` is not safe to call from two threads at once.
    private static let characterType: Void = useUTF8CharacterType()

    /// libcurl hands a non-ASCII host name (`bücher.example`) to libidn2's `idn2_lookup_ul`, which reads it
    /// in the locale's character set. A process starts in the "C" locale (ASCII), where every such name
    /// fails as "URL using bad/illegal format"; the curl tool works because it calls `setlocale` first.
    /// Haul's strings are UTF-8, so LC_CTYPE becomes the environment's when that is UTF-8 (as for curl),
    /// else C.UTF-8. Only the character type changes: messages, numbers and dates stay in "C".
    static func useUTF8CharacterType() {
        if setlocale(LC_CTYPE, "") != nil, isUTF8CharacterType { return }
        _ = setlocale(LC_CTYPE, "C.UTF-8")
    }

    static var isUTF8CharacterType: Bool {
        guard let codeset = nl_langinfo(nl_item(CODESET)) else { return false }
        let name = String(cString: codeset).lowercased()
        return name == "utf-8" || name == "utf8"
    }

    /// Caps the receive rate of all transfers together (`--limit-rate`): each running transfer gets an
    /// equal share, rebalanced whenever one starts or ends. nil lifts the cap.
    package func setOverallReceiveRate(_ bytesPerSecond: Int64?) {
        post(.overallRate(bytesPerSecond))
    }

    /// A download's `ReceiveLimit` changed: its running transfers take the new cap.
    func limitsChanged() {
        post(.rebalance)
    }

    /// Starts a transfer at once; its bytes wait for a reader (bounded by the high watermark).
    package func start(_ request: HTTPRequest) -> Transfer {
        start(request, clock: ContinuousClock())
    }

    /// Starts a transfer whose stall timeout is measured on `clock` (a download's, so a test's manual clock
    /// decides when the transfer has been quiet too long).
    func start(_ request: HTTPRequest, clock: some Clock<Duration>) -> Transfer {
        start(request, clock: clock, openingAhead: 0)
    }

    /// Starts a transfer and, beside it, opens `connections` more to its origin ahead of need: a probe that is
    /// about to learn the size of a file to split (`-s N`) takes its segments' connections with it. They are
    /// HEAD requests on connections of their own, whose answers nobody reads. Once answered, their connections
    /// wait idle in the multi handle's cache, where the segments started after the probe's answer take them:
    /// the other connections' handshakes happen during the probe's round trip instead of after it (two round
    /// trips saved on a long path).
    ///
    /// One command, so the curl thread adds the HEADs in the same turn as the transfer, while its connection is
    /// still busy. (Posted apart, a probe that a fast server sent in one go could end first; a HEAD then took
    /// its idle connection, the others took it in turn after it, and the segments opened their connections
    /// only after the probe's answer: a third of `-s 4` runs on loopback.)
    ///
    /// Once per origin while its connections may still be cached (`aheadMemory`): a later download finds the
    /// ones its predecessor left, and a list of files split from one host costs a few requests, not a few per file.
    func start(_ request: HTTPRequest, clock: some Clock<Duration>, openingAhead connections: Int) -> Transfer {
        let core = TransferCore(request: request, driver: self, activityClock: ActivityClock(clock),
                                limit: ReceiveLimit.current)
        post(.add(core, openingAhead: connections))
        return Transfer(core: core)
    }

    /// Starts a transfer once `previous` has ended on the curl thread (at once when it has already), without a
    /// round trip through `previous`'s reader: `SegmentedFetch` has the rest of the probe's piece follow the
    /// probe. When `previous` fails it ends unstarted, as cancelled; cancelled before its turn, it never asks.
    func start(_ request: HTTPRequest, clock: some Clock<Duration>, after previous: Transfer) -> Transfer {
        let core = TransferCore(request: request, driver: self, activityClock: ActivityClock(clock),
                                limit: ReceiveLimit.current)
        post(.addAfter(core, after: previous.core))
        return Transfer(core: core)
    }

    /// How long an origin's connections opened ahead are remembered: libcurl's default `CURLOPT_MAXAGE_CONN`,
    /// past which an idle connection is not reused.
    static let aheadMemory: Duration = .seconds(118)

    /// The scheme, authority and proxy of a request: what decides whether a cached connection serves it.
    static func origin(of request: HTTPRequest) -> String {
        origin(of: request.url, proxy: request.options.proxy)
    }

    /// The same for a URL and the proxy it goes through. Read over the URL's contiguous UTF-8 (the delimiters
    /// are ASCII), and built byte by byte when it is ASCII: the standard library's generic `firstRange(of:)`
    /// took 9,000 instructions a call, and the UTF-8 view's indices, `lowercased()` and two concatenations
    /// 4,900 more; it runs for each download queued and twice for each transfer.
    static func origin(of url: String, proxy: String?) -> String {
        var url = url
        return url.withUTF8 { bytes -> String in
            var start = 0
            if bytes.count >= 3 {
                for index in 0...(bytes.count - 3)
                where bytes[index] == UInt8(ascii: ":") && bytes[index + 1] == UInt8(ascii: "/")
                    && bytes[index + 2] == UInt8(ascii: "/") {
                    start = index + 3
                    break
                }
            }
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: "/"), bytes[end] != UInt8(ascii: "?"),
                bytes[end] != UInt8(ascii: "#") {
                end += 1
            }
            let origin = UnsafeBufferPointer(rebasing: bytes[..<end])
            guard origin.allSatisfy({ $0 < 0x80 }), proxy?.utf8.allSatisfy({ $0 < 0x80 }) ?? true else {
                return String(decoding: origin, as: UTF8.self).lowercased() + " " + (proxy ?? "")
            }
            let proxyBytes = proxy?.utf8.count ?? 0
            return String(unsafeUninitializedCapacity: origin.count + 1 + proxyBytes) { buffer in
                for (at, byte) in origin.enumerated() {
                    buffer[at] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
                }
                var at = origin.count
                buffer[at] = UInt8(ascii: " ")
                at += 1
                for byte in proxy?.utf8 ?? "".utf8 {
                    buffer[at] = byte
                    at += 1
                }
                return at
            }
        }
    }

    /// Stops the thread after failing every transfer still running. For tests; `shared` is never shut down.
    func shutdown() async {
        post(.shutdown)
        await finished.wait()
    }

    func post(_ command: Command) {
        let wake = inbox.withLockedValue { inbox in
            inbox.commands.append(command)
            defer { inbox.polling = false }
            return inbox.polling
        }
        if wake { curl_multi_wakeup(multi.pointer) }
    }

    fileprivate func takeCommands() -> [Command] {
        inbox.withLockedValue { inbox in
            defer { inbox.commands = [] }
            return inbox.commands
        }
    }

    /// Called right before `curl_multi_poll`: false when a command came since the thread last took them
    /// (it goes round again instead of sleeping); true marks it polling, so that the next post wakes it.
    fileprivate func willPoll() -> Bool {
        inbox.withLockedValue { inbox in
            guard inbox.commands.isEmpty else { return false }
            inbox.polling = true
            return true
        }
    }

    /// Called when `curl_multi_poll` returns: posts no longer need to wake the thread.
    fileprivate func didPoll() {
        inbox.withLockedValue { $0.polling = false }
    }

    fileprivate func threadDidExit() {
        curl_multi_cleanup(multi.pointer)
        finished.open()
    }
}

/// What a driver tells its observer about a transfer, on the curl thread (for tests of backpressure and
/// of the handle's lifetime; the shared driver has no observer).
package enum TransferEvent: Sendable, Equatable {
    /// Paused because its consumer is behind, for the `count`th time.
    case paused(count: Int)
    /// The handle was removed and freed.
    case closed
    /// It waits for a connection opened ahead to its host (`CurlDriver.start(_:clock:openingAhead:)`) instead
    /// of opening one.
    case waitsForAConnectionOpenedAhead
    /// It waits for another transfer to end before it starts (`CurlDriver.start(_:clock:after:)`).
    case waitsForTheTransferBefore
    /// Its receive cap became this many bytes per second (0: none).
    case capped(bytesPerSecond: Int64)
    /// It is ended with `HaulError.refit`: its buffer no longer fits its cap.
    case refitted
}

package typealias TransferObserver = @Sendable (_ transfer: ObjectIdentifier, _ event: TransferEvent) -> Void

/// One easy handle and what only the curl thread knows about it. Created, used and freed on that thread:
/// the callbacks get it as their user data, and `DriverLoop` keeps it alive until the handle is removed.
private final class CurlHandle {
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
    var bufferSize = IOBuffer.largestChunk
    /// A HEAD that only opens a connection ahead of need (`CurlDriver.start(_:clock:openingAhead:)`): no body,
    /// no share of a cap.
    let ahead: Bool

    init(core: TransferCore, easy: UnsafeMutableRawPointer, observer: TransferObserver?, ahead: Bool) {
        self.core = core
        self.easy = easy
        self.observer = observer
        self.ahead = ahead
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        lastActivity = core.activityClock.time(at: .now)
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
    func noteActivity(at now: TransferInstant = .now) {
        lastActivity = core.activityClock.time(at: now)
    }

    func headerLine(_ line: UnsafeRawBufferPointer) {
        noteActivity()
        core.headerLine(line)
    }

    /// The write callback: the return value goes back to curl.
    func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
        let now = TransferInstant.now
        noteActivity(at: now)
        deliverHeadIfPending()
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
        let now = core.activityClock.time(at: .now)
        guard let stallLimit, !pausedForConsumer, pacedUntil == nil else {
            lastActivity = now
            return false
        }
        stalled = now - lastActivity > stallLimit
        return stalled
    }

    /// Hands the head to its waiter at the first body byte, or at the end of a bodiless answer.
    func deliverHeadIfPending() {
        guard !headSeen else { return }
        headSeen = true
        guard core.isHeadPending else { return }
        var status = 0
        haul_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        var urlPointer: UnsafeMutablePointer<CChar>?
        haul_easy_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &urlPointer)
        core.headArrived(status: status, effectiveURL: urlPointer.map { String(cString: $0) } ?? core.request.url)
    }
}

/// The driver thread's own state. Created, used and dropped on that thread only.
private final class DriverLoop {
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
    /// When connections were last opened ahead to each origin (`CurlDriver.start(_:clock:openingAhead:)`).
    var openedAhead: [String: ContinuousClock.Instant] = [:]
    /// Connections opened ahead whose HEAD has not ended yet, by origin.
    var aheadRunning: [String: Int] = [:]
    /// Transfers on connections of their own that wait for one of those (a segment started before a HEAD's
    /// answer came), by origin, with when they began to wait: at most N connections for `-s N`, never one
    /// of their own beside an opened one.
    var waitingForAhead: [String: [(core: TransferCore, since: ContinuousClock.Instant)]] = [:]
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
        // A connection of its own asks HTTP/1.1 (`add`).
        case nil: request.ownConnection ? soloPool : nil
        }
    }

    func run() {
        while true {
            for command in driver.takeCommands() { handle(command) }
            if shuttingDown {
                // The waiting ones first: a HEAD's end would start them.
                for (core, _) in waitingForAhead.values.joined() {
                    end(core, error: HaulError(.cancelled, "the transfer engine stopped"))
                }
                waitingForAhead = [:]
                for core in following.values { end(core, error: HaulError(.cancelled, "the transfer engine stopped")) }
                following = [:]
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
            if ahead > 0 { openAhead(core.request, connections: ahead) }
        case .addAfter(let core, let previous):
            let key = ObjectIdentifier(previous)
            let running = byTransfer[key] != nil || waitingForAhead.values.contains { $0.contains { $0.core === previous } }
                || following.values.contains { $0 === previous }
            if running {
                following[key] = core
                driver.observer?(ObjectIdentifier(core), .waitsForTheTransferBefore)
            } else {
                add(core)
            }
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
            } else if let origin = waitingForAhead.first(where: { $0.value.contains { $0.core === core } })?.key {
                waitingForAhead[origin]?.removeAll { $0.core === core }
                if waitingForAhead[origin]?.isEmpty == true { waitingForAhead[origin] = nil }
                end(core, error: HaulError(.cancelled, "cancelled"))
            } else if let key = following.first(where: { $0.value === core })?.key {
                following[key] = nil
                end(core, error: HaulError(.cancelled, "cancelled"))
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

    private func openAhead(_ request: HTTPRequest, connections: Int) {
        let now = ContinuousClock.now
        let origin = CurlDriver.origin(of: request)
        if let last = openedAhead[origin], now - last < CurlDriver.aheadMemory { return }
        openedAhead = openedAhead.filter { now - $0.value < CurlDriver.aheadMemory }
        openedAhead[origin] = now
        var head = HTTPRequest(url: request.url, method: .head, options: request.options)
        head.headers = request.headers
        head.ownConnection = true
        aheadRunning[origin, default: 0] += connections
        for _ in 0..<connections {
            add(TransferCore(request: head, driver: driver, activityClock: ActivityClock(ContinuousClock())),
                ahead: true)
        }
    }

    /// Starts the transfers that waited too long for a connection opened ahead.
    private func startOverdue() {
        guard !waitingForAhead.isEmpty else { return }
        let now = ContinuousClock.now
        for (origin, var waiting) in waitingForAhead {
            // They queue in the order they came: the overdue ones are the first.
            let overdue = waiting.prefix { now - $0.since >= driver.aheadPatience }
            guard !overdue.isEmpty else { continue }
            waiting.removeFirst(overdue.count)
            waitingForAhead[origin] = waiting.isEmpty ? nil : waiting
            for (core, _) in overdue { add(core, waited: true) }
        }
    }

    /// A HEAD opened ahead to `origin` ended: its connection, if the server kept it, waits in the cache for
    /// the first transfer waiting for one (all of them once no HEAD is left).
    private func aheadEnded(_ origin: String) {
        let left = (aheadRunning[origin] ?? 1) - 1
        aheadRunning[origin] = left > 0 ? left : nil
        guard var waiting = waitingForAhead.removeValue(forKey: origin) else { return }
        let starting = left > 0 ? [waiting.removeFirst()] : waiting
        if left > 0, !waiting.isEmpty { waitingForAhead[origin] = waiting }
        for (core, _) in starting { add(core, waited: true) }
    }

    /// Ends a transfer that never got an easy handle.
    private func end(_ core: TransferCore, error: HaulError) {
        core.finish(error)
        core.markClosed()
        driver.observer?(ObjectIdentifier(core), .closed)
        startFollower(of: core, after: error)
    }

    /// Starts the transfer that waited for `core` to end, if one did; when `core` failed (or was cancelled, or
    /// refitted), that one ends unstarted, cancelled, and its reader asks again if it still wants the bytes.
    private func startFollower(of core: TransferCore, after error: HaulError?) {
        guard let next = following.removeValue(forKey: ObjectIdentifier(core)) else { return }
        if error == nil {
            add(next)
        } else {
            end(next, error: HaulError(.cancelled, "the transfer it was to follow ended early"))
        }
    }

    private func add(_ core: TransferCore, ahead: Bool = false, waited: Bool = false) {
        if !ahead, !waited, !aheadRunning.isEmpty, core.request.ownConnection {
            let origin = CurlDriver.origin(of: core.request)
            if aheadRunning[origin] != nil {
                waitingForAhead[origin, default: []].append((core, .now))
                driver.observer?(ObjectIdentifier(core), .waitsForAConnectionOpenedAhead)
                return
            }
        }
        guard let easy = spareEasy.popLast() ?? curl_easy_init() else {
            end(core, error: HaulError(.other, "out of memory starting a transfer"))
            return
        }
        let handle = CurlHandle(core: core, easy: easy, observer: driver.observer, ahead: ahead)
        let request = core.request
        let options = request.options
        let me = Unmanaged.passUnretained(handle).toOpaque()

        // A String passed where C takes a pointer is first copied into a new array (two allocations a file
        // for the URL and the user agent alone); through `withCString` a native string is passed in place.
        func setString(_ option: CURLoption, _ value: String) {
            _ = value.withCString { haul_easy_setopt_string(easy, option, $0) }
        }
        setString(CURLOPT_URL, request.url)
        haul_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        haul_easy_setopt_string(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        haul_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        haul_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 1)
        haul_easy_setopt_long(easy, CURLOPT_MAXREDIRS, options.maxRedirects)
        haul_easy_setopt_long(easy, CURLOPT_BUFFERSIZE, IOBuffer.largestChunk)
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
        haul_easy_setopt_ptr(easy, CURLOPT_SHARE, pool(for: request))
        // Several downloads from one HTTPS host: streams of one HTTP/2 connection (when the server speaks
        // it) instead of a TLS handshake each.
        if !request.ownConnection, request.isHTTPS {
            haul_easy_setopt_long(easy, CURLOPT_PIPEWAIT, 1)
        }
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
        if let range = request.curlRange { setString(CURLOPT_RANGE, range) }

        var headers = request.headers
        if let validator = request.ifRange { headers.append("If-Range: \(validator)") }
        var list: UnsafeMutablePointer<curl_slist>?
        for header in headers { list = header.withCString { curl_slist_append(list, $0) } }
        handle.headerList = list
        if let list { haul_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, list) }

        haul_easy_setopt_ptr(easy, CURLOPT_ERRORBUFFER, handle.errorBuffer)
        haul_easy_setopt_ptr(easy, CURLOPT_PRIVATE, me)
        haul_easy_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION, writeCallback)
        haul_easy_setopt_ptr(easy, CURLOPT_WRITEDATA, me)
        haul_easy_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION, headerCallback)
        haul_easy_setopt_ptr(easy, CURLOPT_HEADERDATA, me)

        handles[easy] = handle
        byTransfer[ObjectIdentifier(core)] = handle
        rebalance()
        handle.added = true
        let code = curl_multi_add_handle(multi, easy)
        if code != CURLM_OK {
            close(handle, error: HaulError(.other, String(cString: curl_multi_strerror(code))))
        }
    }

    /// Resumes the transfers the pacer held whose time has come (curl hands the held chunk over at once);
    /// returns when the next of the others may go on.
    private func resumePaced(now: TransferInstant) -> TransferInstant? {
        var next: TransferInstant?
        for handle in handles.values {
            guard let until = handle.pacedUntil else { continue }
            if until <= now {
                handle.pacedUntil = nil
                handle.noteActivity(at: now)
                curl_easy_pause(handle.easy, CURLPAUSE_CONT)
            }
            // Resuming may have handed over a chunk that ended in debt again: that one waits anew.
            if let until = handle.pacedUntil { next = next.map { Swift.min($0, until) } ?? until }
        }
        return next
    }

    /// Gives every transfer the lower of its caps: its share of the overall cap, and its share of its
    /// download's live cap (split over that download's running transfers) or else its own. 0 lifts the cap.
    private func rebalance() {
        let receiving = handles.values.count { !$0.ahead }
        guard receiving > 0 else { return }
        let overallShare = overallRate.map { Swift.max(1, $0 / Int64(receiving)) } ?? .max
        // Every managed download has a live cap, but few have a rate in it: only those are counted, each
        // rate read once (this runs at each transfer's start and end).
        var perDownload: [ObjectIdentifier: (rate: Int64, transfers: Int64)] = [:]
        for handle in handles.values {
            guard let limit = handle.core.limit else { continue }
            let key = ObjectIdentifier(limit)
            if let counted = perDownload[key] {
                perDownload[key] = (counted.rate, counted.transfers + 1)
            } else if let rate = limit.bytesPerSecond {
                perDownload[key] = (rate, 1)
            }
        }
        var misfits: [CurlHandle] = []
        for (easy, handle) in handles where !handle.ahead {
            let core = handle.core
            var cap = overallShare
            if let limit = core.limit {
                // The live cap replaces the one the request started with.
                if let share = perDownload[ObjectIdentifier(limit)] {
                    cap = Swift.min(cap, Swift.max(1, share.rate / share.transfers))
                }
            } else if let own = core.request.options.maxReceiveRate {
                cap = Swift.min(cap, own)
            }
            let applied = cap == .max ? 0 : cap
            guard handle.appliedRate != applied else { continue }
            handle.appliedRate = applied
            if pace(handle, easy: easy, rate: applied) { misfits.append(handle) }
        }
        // Each close rebalances the rest, which may have closed one of these already.
        for handle in misfits where handles[handle.easy] === handle {
            handle.observer?(ObjectIdentifier(handle.core), .refitted)
            close(handle, error: .refit)
        }
    }

    /// Puts `handle` under a cap of `rate` (0: none). A transfer not started yet gets a receive buffer to match,
    /// so that one chunk is a small part of a second at that rate. A running one keeps its buffer (libcurl
    /// must not be given another during a transfer), and its pace holds whatever the chunk size; but when
    /// the buffer is far off the new cap and the transfer's reader can go on from where it stopped
    /// (`Transfer.refitsToCap`), the result is true: the transfer is then ended with `HaulError.refit`, and
    /// its reader asks for the rest with a buffer fitted to the cap (256 KiB chunks at a few KiB/s would come
    /// a minute apart; 2 KiB ones at full speed would cost a callback each).
    private func pace(_ handle: CurlHandle, easy: UnsafeMutableRawPointer, rate: Int64) -> Bool {
        let now = TransferInstant.now
        if rate == 0 {
            handle.pacer = nil
        } else if handle.pacer != nil {
            handle.pacer?.setRate(rate, now: now)
        } else {
            handle.pacer = ReceivePacer(rate: rate, now: now)
        }
        // Not added yet: `add` has set the largest buffer, which an uncapped transfer keeps.
        if !handle.added, rate > 0 {
            handle.bufferSize = ReceivePacer.chunkSize(rate: rate, largest: IOBuffer.largestChunk)
            haul_easy_setopt_long(easy, CURLOPT_BUFFERSIZE, handle.bufferSize)
        }
        // A held transfer waits as long as its debt at the new rate says; lifted, it goes on at the next turn.
        if handle.pacedUntil != nil {
            handle.pacedUntil = handle.pacer?.paidOff(from: now) ?? now
        }
        handle.observer?(ObjectIdentifier(handle.core), .capped(bytesPerSecond: rate))
        return handle.added && handle.core.refitsToCap
            && ReceivePacer.isMisfit(buffer: handle.bufferSize, rate: rate, largest: IOBuffer.largestChunk)
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
                var osErrno = 0
                _ = haul_easy_getinfo_long(easy, CURLINFO_OS_ERRNO, &osErrno)
                error = HaulError(curlCode: code, detail: String(cString: handle.errorBuffer), osErrno: Int32(osErrno))
            }
            close(handle, error: error)
        }
    }

    /// Ends a transfer: removes and frees the curl handle, then tells its consumer. In that order because
    /// `curl_easy_cleanup` is what writes a `--save-cookies` jar: a consumer told first could end the
    /// process before the jar exists.
    private func close(_ handle: CurlHandle, error: HaulError?) {
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
