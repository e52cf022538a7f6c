import FoundationEssentials

/// What makes a download a torrent's (`DownloadJob.torrent`): a magnet link or a .torrent's bytes, and the
/// options of a torrent's run. A job with one is run by libtorrent (`TorrentEngine`), not by HTTP; its
/// `url` is the magnet, or the .torrent's name, for the lists.
package struct TorrentSpec: Sendable, Equatable, Codable {
    /// `magnet:?xt=urn:btih:...`; nil for a .torrent's content.
    package var magnet: String?
    /// The .torrent file's bytes (base64 in JSON), as `haul add FILE.torrent` and aria2's `addTorrent` send
    /// them; nil for a magnet.
    package var metainfo: [UInt8]?
    /// `--select-file` (aria2's syntax, 1-based); nil for every file.
    package var selection: String?
    /// `--bt-tracker`: trackers beside the torrent's own.
    package var trackers: [String]
    /// `--seed-ratio`, `--seed-time` (minutes), as given; nil for the default (ratio 1.0).
    package var seedRatio: Double?
    package var seedMinutes: Double?
    /// `--bt-metadata-timeout`, seconds; nil for the default (180).
    package var metadataTimeout: Double?

    package init(magnet: String? = nil, metainfo: [UInt8]? = nil, selection: String? = nil, trackers: [String] = [],
                 seedRatio: Double? = nil, seedMinutes: Double? = nil, metadataTimeout: Double? = nil) {
        self.magnet = magnet
        self.metainfo = metainfo
        self.selection = selection
        self.trackers = trackers
        self.seedRatio = seedRatio
        self.seedMinutes = seedMinutes
        self.metadataTimeout = metadataTimeout
    }

    private enum CodingKeys: String, CodingKey {
        case magnet, metainfo, selection, trackers, seedRatio, seedMinutes, metadataTimeout
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        magnet = try container.decodeIfPresent(String.self, forKey: .magnet)
        metainfo = try container.decodeIfPresent(String.self, forKey: .metainfo).map { text in
            guard let bytes = Data(base64Encoded: text).map(Array.init) else {
                throw DecodingError.dataCorruptedError(forKey: .metainfo, in: container, debugDescription: "not base64")
            }
            return bytes
        }
        selection = try container.decodeIfPresent(String.self, forKey: .selection)
        trackers = try container.decodeIfPresent([String].self, forKey: .trackers) ?? []
        seedRatio = try container.decodeIfPresent(Double.self, forKey: .seedRatio)
        seedMinutes = try container.decodeIfPresent(Double.self, forKey: .seedMinutes)
        metadataTimeout = try container.decodeIfPresent(Double.self, forKey: .metadataTimeout)
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(magnet, forKey: .magnet)
        try container.encodeIfPresent(metainfo.map { Data($0).base64EncodedString() }, forKey: .metainfo)
        try container.encodeIfPresent(selection, forKey: .selection)
        if !trackers.isEmpty { try container.encode(trackers, forKey: .trackers) }
        try container.encodeIfPresent(seedRatio, forKey: .seedRatio)
        try container.encodeIfPresent(seedMinutes, forKey: .seedMinutes)
        try container.encodeIfPresent(metadataTimeout, forKey: .metadataTimeout)
    }
}
