/// One address a download's file can come from. A download has one or more (`DownloadJob.sources`): the URL
/// given, its mirrors (`--mirror`, the tab-separated URLs of an input file's line, the URIs of one aria2
/// `addUri`), a metalink's `<url>`s, the duplicates an RFC 6249 server lists.
package struct DownloadSource: Sendable, Equatable, Hashable, Codable {
    package var url: String
    /// A metalink's preference: 1 is the most preferred (RFC 5854 `priority`, 1...999999); nil for a source given
    /// without one, which keeps its place in the order given.
    package var priority: Int?
    /// Where the source is, as a metalink says it (an ISO 3166-1 alpha-2 country code), for ordering by `--location`.
    package var location: String?

    package init(url: String, priority: Int? = nil, location: String? = nil) {
        self.url = url
        self.priority = priority
        self.location = location
    }
}

/// What one source of a download is doing and has done, as the engine reports it (`ManagerEvent.sources`): what
/// the details and `haul ls --json` show per source.
package struct SourceStatus: Sendable, Equatable, Codable {
    package enum State: String, Sendable, Codable, CaseIterable {
        /// Not asked yet, or its connections are all in use elsewhere.
        case waiting
        /// Connections of the download are fetching from it.
        case active
        /// It answered and served its share; nothing is asked of it now.
        case idle
        /// It failed (refused, gone, stalled); its work went to the others. A retry may ask it again.
        case failed
        /// It serves another file (another size, other validators, other bytes): never asked again for this
        /// download.
        case dropped
    }

    /// Its password masked.
    package var url: String
    package var state: State
    /// Bytes it has brought in this run.
    package var bytes: Int64
    /// Its recent receive rate.
    package var bytesPerSecond: Double
    /// Connections fetching from it now.
    package var connections: Int
    /// Why it failed or was dropped: one line.
    package var reason: String?

    package init(url: String, state: State = .waiting, bytes: Int64 = 0, bytesPerSecond: Double = 0,
                 connections: Int = 0, reason: String? = nil) {
        self.url = url
        self.state = state
        self.bytes = bytes
        self.bytesPerSecond = bytesPerSecond
        self.connections = connections
        self.reason = reason
    }
}
