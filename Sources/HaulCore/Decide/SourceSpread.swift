/// Which source each connection of a download from several sources fetches from, and what each source has
/// done: plain decisions, no I/O and no clock (`SourcePool` holds one under a lock for the segment workers).
///
/// The connections go round robin over the sources in the job's order, at most `perServer` to one server (its
/// host: two mirrors on one machine share its limit, whatever their ports); with fewer connections than sources the first
/// ones are used and the others stand by. A source that fails gives its connections up, and each goes to the
/// working source with the fewest connections and room on its server (a source standing by first). A source
/// that serves another file is dropped: never asked again in this download, not even by a retry.
package struct SourceSpread: Equatable {
    struct Source: Equatable {
        let url: String
        /// What the per-server cap counts by: the URL's host, lower case.
        let server: String
        var state: SourceStatus.State = .waiting
        var connections = 0
        /// Bytes it brought in this run.
        var bytes: Int64 = 0
        /// Why it failed or was dropped.
        var reason: String?
        /// Whether its first answer was checked against the file (the probe's source agrees by definition).
        var agreed = false
        /// The validators its answers carry, once its first answer agreed: what `If-Range` pins its later
        /// ranges to (each source names the file its own way: two mirrors' ETags differ).
        var etag: String?
        var lastModified: String?

        var usable: Bool { state != .failed && state != .dropped }
    }

    private(set) var sources: [Source]
    let perServer: Int

    init(urls: [String], perServer: Int) {
        sources = urls.map { Source(url: $0, server: Self.server(of: $0)) }
        self.perServer = Swift.max(1, perServer)
    }

    /// A source found once the download began (the `Link: rel=duplicate` headers of its first answer): it
    /// comes last, waiting, its first answer still to be checked against the file.
    mutating func append(url: String) {
        sources.append(Source(url: url, server: Self.server(of: url)))
    }

    /// The host of `url` (lower case, without user information or port): what the per-server cap counts by, as
    /// aria2's `--max-connection-per-server` does (two mirrors on one machine share it, whatever their ports).
    package static func server(of url: String) -> String {
        let utf8 = Array(url.utf8)
        var start = 0
        for index in 0..<Swift.max(0, utf8.count - 2) where utf8[index] == UInt8(ascii: ":")
            && utf8[index + 1] == UInt8(ascii: "/") && utf8[index + 2] == UInt8(ascii: "/") {
            start = index + 3
            break
        }
        let rest = Substring(String(decoding: utf8[start...], as: UTF8.self))
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostPort = authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority
        // An IPv6 address keeps its brackets; a port follows the last colon after them.
        let afterAddress = hostPort.lastIndex(of: "]") ?? hostPort.startIndex
        let host = hostPort[afterAddress...].lastIndex(of: ":").map { hostPort[..<$0] } ?? hostPort
        return host.lowercased()
    }

    /// The sources of `workers` connections, worker 0 first: round robin over the usable sources in order
    /// from `first` (the probe's), skipping one whose server has `perServer` connections; nil for a worker that
    /// stands by (no room).
    mutating func assign(workers: Int, from first: Int = 0) -> [Int?] {
        var assigned: [Int?] = []
        var next = first
        for _ in 0..<workers {
            var chosen: Int?
            for step in 0..<sources.count {
                let index = (next + step) % sources.count
                if sources[index].usable && hasRoom(index) {
                    chosen = index
                    break
                }
            }
            if let chosen {
                connect(chosen)
                next = chosen + 1
            }
            assigned.append(chosen)
        }
        return assigned
    }

    /// A source for a connection that has none (its source failed, or it stood by): the usable one with the
    /// fewest connections and room on its server, the earliest on a tie; nil when there is none. It counts
    /// the connection.
    mutating func take() -> Int? {
        let candidates = sources.indices.filter { sources[$0].usable && hasRoom($0) }
        guard let best = candidates.min(by: { sources[$0].connections < sources[$1].connections }) else { return nil }
        connect(best)
        return best
    }

    /// One connection asks `source` (the one connection of a download over one, which has no spread to take).
    mutating func use(_ source: Int) {
        if sources[source].usable { connect(source) }
    }

    /// A connection of `source` stops using it (done, or moving away).
    mutating func release(_ source: Int) {
        sources[source].connections = Swift.max(0, sources[source].connections - 1)
        if sources[source].connections == 0, sources[source].state == .active { sources[source].state = .idle }
    }

    /// `source` failed with `reason`: its connections move away (each calls `release` and `take`). Returns
    /// false when it had failed, or was dropped, already (nothing new to say).
    mutating func fail(_ source: Int, reason: HaulError) -> Bool {
        guard sources[source].usable else { return false }
        sources[source].state = .failed
        sources[source].reason = reason.message
        return true
    }

    /// `source` serves another file: dropped for the rest of the download. Returns false when it was dropped
    /// already.
    mutating func drop(_ source: Int, reason: SourceMismatch) -> Bool {
        guard sources[source].state != .dropped else { return false }
        sources[source].state = .dropped
        sources[source].reason = reason.phrase
        return true
    }

    /// Its first answer agreed with the file; `etag` and `lastModified` are its validators.
    mutating func agreed(_ source: Int, etag: String?, lastModified: String?) {
        sources[source].agreed = true
        sources[source].etag = etag
        sources[source].lastModified = lastModified
    }

    mutating func add(bytes: Int64, from source: Int) {
        sources[source].bytes += bytes
    }

    /// Whether any source may still be asked.
    var anyUsable: Bool { sources.contains { $0.usable } }

    /// The first usable source at or after `index` in the job's order (wrapping), nil when none is.
    func firstUsable(from index: Int = 0) -> Int? {
        (0..<sources.count).map { (index + $0) % sources.count }.first { sources[$0].usable }
    }

    /// A retry asks every source again but the dropped ones: the failed ones wait again, and no connection
    /// holds any (the attempt's connections are gone).
    mutating func retry() {
        for index in sources.indices {
            sources[index].connections = 0
            if sources[index].state == .failed || sources[index].state == .active {
                sources[index].state = sources[index].state == .failed ? .waiting : .idle
                if sources[index].state == .waiting { sources[index].reason = nil }
            }
        }
    }

    /// What each source is doing, for `DownloadEvent.sources`; `rates` per source (missing: 0).
    func statuses(rates: [Double]) -> [SourceStatus] {
        sources.indices.map { index in
            let source = sources[index]
            return SourceStatus(url: URLRedaction.masked(source.url), state: source.state, bytes: source.bytes,
                                bytesPerSecond: index < rates.count && source.state == .active ? rates[index] : 0,
                                connections: source.connections, reason: source.reason)
        }
    }

    private func hasRoom(_ index: Int) -> Bool {
        let server = sources[index].server
        return sources.reduce(0) { $0 + ($1.server == server ? $1.connections : 0) } < perServer
    }

    private mutating func connect(_ index: Int) {
        sources[index].connections += 1
        sources[index].state = .active
    }
}

extension SourceMismatch {
    /// "serves another file: size 1000 not 2000", to follow the source's URL.
    var phrase: String {
        switch self {
        case .otherSize(let size, let expected): "serves another file: size \(size) not \(expected)"
        case .otherBytes(let offset): "sent other bytes than the other sources at \(offset)"
        }
    }
}
