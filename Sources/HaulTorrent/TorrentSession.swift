import CTorrent
import Glibc
import HaulCore
import NIOConcurrencyHelpers

/// How a session talks to the world. Defaults as aria2's and libtorrent's: all interfaces, DHT, PEX and
/// local discovery on; the tests turn them off and listen on 127.0.0.1 alone.
package struct TorrentSessionOptions: Sendable, Equatable {
    /// libtorrent's listen_interfaces: "0.0.0.0:6881,[::]:6881", or "127.0.0.1:0" (the system picks a port).
    package var listenInterfaces = "0.0.0.0:6881,[::]:6881"
    /// Where outgoing connections come from ("": any).
    package var outgoingInterfaces = ""
    package var dht = true
    package var pex = true
    package var localDiscovery = true
    package var upnp = true
    package var natPMP = true
    /// Bytes per second; 0 for no limit.
    package var downloadRateLimit = 0
    package var uploadRateLimit = 0
    /// Most peer connections over all torrents; 0 for libtorrent's default.
    package var maxConnections = 0
    /// More than one peer on an address (a swarm on 127.0.0.1 is all one address).
    package var allowSameAddress = false

    package init() {}

    /// A session for a test's swarm: 127.0.0.1 only, nothing that reaches past it.
    package static var loopback: TorrentSessionOptions {
        var options = TorrentSessionOptions()
        options.listenInterfaces = "127.0.0.1:0"
        options.outgoingInterfaces = "127.0.0.1"
        options.dht = false
        options.pex = false
        options.localDiscovery = false
        options.upnp = false
        options.natPMP = false
        options.allowSameAddress = true
        return options
    }
}

/// One libtorrent session: its peers, its disk threads, and its alerts as `AsyncStream`s, one per subscriber
/// (each torrent's run takes the session's every alert and keeps its own). A dedicated thread blocks in
/// `haul_torrent_session_wait` (woken by libtorrent's alert notify callback) and hands each batch of alerts over
/// as `TorrentAlert` values: no polling. `close()` ends it. `@unchecked Sendable`: libtorrent's
/// session is thread-safe, and the pointer is freed once, by `close`, after the thread has stopped.
package final class TorrentSession: @unchecked Sendable {
    private let session: OpaquePointer
    private let subscribers = NIOLockedValueBox(Subscribers())
    private let stopping = NIOLockedValueBox(false)
    private let stopped = Latch()
    private let closed = NIOLockedValueBox(false)

    package init(_ options: TorrentSessionOptions) throws(HaulError) {
        let made = options.listenInterfaces.withCString { listen in
            options.outgoingInterfaces.withCString { outgoing in
                var config = haul_torrent_session_config(
                    listen_interfaces: listen, outgoing_interfaces: outgoing,
                    enable_dht: options.dht ? 1 : 0, enable_pex: options.pex ? 1 : 0,
                    enable_lsd: options.localDiscovery ? 1 : 0, enable_upnp: options.upnp ? 1 : 0,
                    enable_natpmp: options.natPMP ? 1 : 0, download_rate_limit: Int32(clamping: options.downloadRateLimit),
                    upload_rate_limit: Int32(clamping: options.uploadRateLimit),
                    connections_limit: Int32(clamping: options.maxConnections),
                    allow_same_address: options.allowSameAddress ? 1 : 0)
                return withError { haul_torrent_session_new(&config, $0, $1) }
            }
        }
        guard let session = made.value else { throw HaulError(.other, "cannot start the torrent session: \(made.error)") }
        self.session = session
        let pointer = UInt(bitPattern: session)
        let subscribers = self.subscribers
        let stopping = self.stopping
        let stopped = self.stopped
        let trace = getenv("HAUL_TORRENT_TRACE") != nil
        detachEssentialThread {
            guard let session = OpaquePointer(bitPattern: pointer) else { return }
            // Popped before each wait: libtorrent calls the notify function only when its queue goes from empty
            // to not empty, so alerts queued before the function was set (the session's first) must be taken
            // first, or no call ever comes.
            while !stopping.withLockedValue({ $0 }) {
                var count = 0
                if let alerts = haul_torrent_session_pop_alerts(session, &count) {
                    let receivers = subscribers.withLockedValue { Array($0.continuations.values) }
                    for alert in UnsafeBufferPointer(start: alerts, count: count) {
                        let alert = TorrentAlert(alert)
                        if trace {
                            let line = "haul: torrent \(alert.hashes.v1 ?? alert.hashes.v2 ?? "-"): \(alert.kind): \(alert.message)\n"
                            _ = line.withCString { write(2, $0, strlen($0)) }
                        }
                        for receiver in receivers { receiver.yield(alert) }
                    }
                    haul_torrent_alerts_free(alerts, count)
                }
                _ = haul_torrent_session_wait(session, -1)
            }
            let receivers = subscribers.withLockedValue { subscribers in
                subscribers.closed = true
                return Array(subscribers.continuations.values)
            }
            for receiver in receivers { receiver.finish() }
            stopped.open()
        }
    }

    private struct Subscribers {
        var continuations: [Int: AsyncStream<TorrentAlert>.Continuation] = [:]
        var next = 0
        var closed = false
    }

    /// Every alert from now on, until the stream is dropped or the session closes.
    package func subscribe() -> AsyncStream<TorrentAlert> {
        let (stream, continuation) = AsyncStream.makeStream(of: TorrentAlert.self)
        let key = subscribers.withLockedValue { subscribers -> Int? in
            guard !subscribers.closed else { return nil }
            defer { subscribers.next += 1 }
            subscribers.continuations[subscribers.next] = continuation
            return subscribers.next
        }
        guard let key else {
            continuation.finish()
            return stream
        }
        let subscribers = self.subscribers
        continuation.onTermination = { _ in
            _ = subscribers.withLockedValue { $0.continuations.removeValue(forKey: key) }
        }
        return stream
    }

    /// The port the session listens on (0 before it does).
    package var listenPort: Int { Int(haul_torrent_session_listen_port(session)) }

    /// Adds a torrent; libtorrent's refusal (a duplicate, a save path it cannot use) as a file I/O error.
    package func add(_ metadata: TorrentMetadata) throws(HaulError) -> TorrentHandle {
        let made = withError { haul_torrent_session_add(session, metadata.params, $0, $1) }
        guard let handle = made.value else { throw HaulError(.fileIO, "cannot add the torrent: \(made.error)") }
        return TorrentHandle(handle)
    }

    /// Takes the torrent out (its files stay); a `.removed` alert follows.
    package func remove(_ handle: TorrentHandle) { haul_torrent_session_remove(session, handle.handle) }

    /// Stops the alert thread, then the session (its peers told, its files closed). Once.
    package func close() async {
        guard closed.withLockedValue({ closed in defer { closed = true }; return !closed }) else { return }
        stopping.withLockedValue { $0 = true }
        haul_torrent_session_wake(session)
        await stopped.wait()
        haul_torrent_session_free(session)
    }
}

/// A torrent in a session. libtorrent's handle is safe to use from any thread.
package final class TorrentHandle: @unchecked Sendable {
    let handle: OpaquePointer

    /// Its info-hashes, read once as it was added: what its alerts name it by, while and after it is in the
    /// session (a hybrid's magnet learns its v1 hash with the metadata: alerts then carry both).
    package let hashes: InfoHashes

    init(_ handle: OpaquePointer) {
        self.handle = handle
        var v1 = [CChar](repeating: 0, count: 41), v2 = [CChar](repeating: 0, count: 65)
        haul_torrent_handle_info_hashes(handle, &v1, &v2)
        hashes = InfoHashes(v1: v1, v2: v2)
    }
    deinit { haul_torrent_handle_free(handle) }

    /// Whether `alert` is about this torrent.
    package func owns(_ alert: TorrentAlert) -> Bool { alert.hashes.overlaps(hashes) }

    package func status() -> TorrentStatus? {
        var status = haul_torrent_status()
        let result = withError { haul_torrent_handle_status(handle, &status, $0, $1) == 0 ? true : nil }
        guard result.value != nil else { return nil }
        return TorrentStatus(status)
    }

    /// The metadata, once the torrent has it (a magnet's, after the peers gave it).
    package func metadata() -> TorrentMetadata? { haul_torrent_handle_metadata(handle).map(TorrentMetadata.init(params:)) }

    /// Each file's bytes in pieces that passed their hash check.
    package func verifiedBytes(files count: Int) -> [Int64] {
        var bytes = [Int64](repeating: 0, count: count)
        let written = bytes.withUnsafeMutableBufferPointer { haul_torrent_handle_file_progress(handle, $0.baseAddress, Int32(count)) }
        return Array(bytes.prefix(Int(written)))
    }

    package func rename(file index: Int, to path: String) { haul_torrent_handle_rename_file(handle, Int32(index), path) }
    package func setPriority(file index: Int, _ priority: Int) { haul_torrent_handle_set_file_priority(handle, Int32(index), Int32(priority)) }
    package func saveResumeData() { haul_torrent_handle_save_resume_data(handle) }
    package func pause() { haul_torrent_handle_pause(handle) }
    package func resume() { haul_torrent_handle_resume(handle) }
}

/// A torrent's state, as the model needs it: verified bytes only (a peer's bytes count once their piece's hash
/// matched), rates, peers.
package struct TorrentStatus: Sendable, Equatable {
    package enum State: Sendable, Equatable { case checking, metadata, downloading, finished, seeding, other }
    package var state: State
    package var hasMetadata: Bool
    package var paused: Bool
    package var wanted: Int64
    package var verified: Int64
    package var downloaded: Int64
    package var uploaded: Int64
    package var downloadRate: Int
    package var uploadRate: Int
    package var peers: Int
    package var seeds: Int
    /// Something changed since the resume data was last saved.
    package var needsResumeSave: Bool
    /// libtorrent's words for the torrent's error, nil when it has none.
    package var error: String?

    init(_ status: haul_torrent_status) {
        switch Int(status.state) {
        case Int(HAUL_TORRENT_CHECKING_FILES), Int(HAUL_TORRENT_CHECKING_RESUME_DATA): state = .checking
        case Int(HAUL_TORRENT_DOWNLOADING_METADATA): state = .metadata
        case Int(HAUL_TORRENT_DOWNLOADING): state = .downloading
        case Int(HAUL_TORRENT_FINISHED): state = .finished
        case Int(HAUL_TORRENT_SEEDING): state = .seeding
        default: state = .other
        }
        hasMetadata = status.has_metadata != 0
        paused = status.paused != 0
        wanted = status.total_wanted
        verified = status.total_wanted_done
        downloaded = status.total_payload_download
        uploaded = status.total_payload_upload
        downloadRate = Int(status.download_rate)
        uploadRate = Int(status.upload_rate)
        peers = Int(status.num_peers)
        seeds = Int(status.num_seeds)
        needsResumeSave = status.need_save_resume != 0
        let words = withUnsafeBytes(of: status.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        error = words.isEmpty ? nil : words
    }
}

/// An alert of libtorrent's, copied out of its buffer.
package struct TorrentAlert: Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        case metadataReceived, fileCompleted, finished, error, fileError, resumeData, resumeDataFailed
        case fileRenamed, fileRenameFailed, stateChanged, checked, trackerError, listenFailed, metadataFailed
        case hashFailed, removed, other
    }
    package var kind: Kind
    /// The torrent's info-hashes, none for the session's own alerts.
    package var hashes: InfoHashes
    /// The file, the piece, or the new state; -1 when none.
    package var index: Int
    package var diskFull: Bool
    /// libtorrent's words for it.
    package var message: String
    /// `.resumeData`: the bencoded resume data.
    package var data: [UInt8]

    init(_ alert: haul_torrent_alert) {
        let kinds: [Int32: Kind] = [
            Int32(HAUL_ALERT_METADATA_RECEIVED): .metadataReceived, Int32(HAUL_ALERT_FILE_COMPLETED): .fileCompleted,
            Int32(HAUL_ALERT_TORRENT_FINISHED): .finished, Int32(HAUL_ALERT_TORRENT_ERROR): .error,
            Int32(HAUL_ALERT_FILE_ERROR): .fileError, Int32(HAUL_ALERT_SAVE_RESUME_DATA): .resumeData,
            Int32(HAUL_ALERT_SAVE_RESUME_FAILED): .resumeDataFailed, Int32(HAUL_ALERT_FILE_RENAMED): .fileRenamed,
            Int32(HAUL_ALERT_FILE_RENAME_FAILED): .fileRenameFailed, Int32(HAUL_ALERT_STATE_CHANGED): .stateChanged,
            Int32(HAUL_ALERT_TORRENT_CHECKED): .checked, Int32(HAUL_ALERT_TRACKER_ERROR): .trackerError,
            Int32(HAUL_ALERT_LISTEN_FAILED): .listenFailed, Int32(HAUL_ALERT_METADATA_FAILED): .metadataFailed,
            Int32(HAUL_ALERT_HASH_FAILED): .hashFailed, Int32(HAUL_ALERT_TORRENT_REMOVED): .removed,
        ]
        kind = kinds[alert.kind] ?? .other
        hashes = withUnsafeBytes(of: alert.v1) { v1 in
            withUnsafeBytes(of: alert.v2) { v2 in InfoHashes(v1: Array(v1.bindMemory(to: CChar.self)), v2: Array(v2.bindMemory(to: CChar.self))) }
        }
        index = Int(alert.index)
        diskFull = alert.disk_full != 0
        message = withUnsafeBytes(of: alert.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        data = alert.data.map { Array(UnsafeRawBufferPointer(start: $0, count: alert.length)) } ?? []
    }
}

/// A torrent's v1 and v2 info-hashes in hex, nil for a version it has not.
package struct InfoHashes: Sendable, Equatable, Hashable {
    package var v1: String?
    package var v2: String?

    package init(v1: String?, v2: String?) {
        self.v1 = v1
        self.v2 = v2
    }

    /// From C strings ("" for none).
    init(v1: [CChar], v2: [CChar]) {
        func text(_ chars: [CChar]) -> String? {
            let bytes = chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
        }
        self.init(v1: text(v1), v2: text(v2))
    }

    /// Whether both name the same torrent: a hash of one version they both have is equal.
    package func overlaps(_ other: InfoHashes) -> Bool {
        (v1 != nil && v1 == other.v1) || (v2 != nil && v2 == other.v2)
    }
}
