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
///
/// This file is the driver's face to other threads. The curl thread's side is `DriverLoop` (its multi loop in
/// `DriverLoop.swift`; receive caps in `DriverLoop+Pacing.swift`; connections opened ahead and transfers that
/// wait on others in `DriverLoop+Waiting.swift`), and each easy handle is a `CurlHandle` (`CurlHandle.swift`).
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
    ///
    /// Its stall timeout is measured on the continuous clock: this is the composition default for callers
    /// that have no download's clock to give (a service client, a preview's fetch, tests of the transport),
    /// and the one place in Transport that makes a clock. Everything else reads the time through the clock a
    /// caller passes (`ActivityClock`) or, on the curl thread, through `TransferInstant.now`.
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

    func takeCommands() -> [Command] {
        inbox.withLockedValue { inbox in
            defer { inbox.commands = [] }
            return inbox.commands
        }
    }

    /// Called right before `curl_multi_poll`: false when a command came since the thread last took them
    /// (it goes round again instead of sleeping); true marks it polling, so that the next post wakes it.
    func willPoll() -> Bool {
        inbox.withLockedValue { inbox in
            guard inbox.commands.isEmpty else { return false }
            inbox.polling = true
            return true
        }
    }

    /// Called when `curl_multi_poll` returns: posts no longer need to wake the thread.
    func didPoll() {
        inbox.withLockedValue { $0.polling = false }
    }

    func threadDidExit() {
        curl_multi_cleanup(multi.pointer)
        finished.open()
    }
}
