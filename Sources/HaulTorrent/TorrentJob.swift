import HaulCore

/// A torrent or magnet to download, with the options of its run.
package struct TorrentJob: Sendable, Equatable {
    package enum Source: Sendable, Equatable {
        /// A .torrent file's path.
        case file(String)
        case magnet(String)
        /// A .torrent's bytes (the service's jobs carry them), with the name it was given by.
        case metainfo([UInt8], name: String)
    }

    package var source: Source
    /// Where the files go (made absolute by the caller: libtorrent resolves names against it).
    package var directory: String
    /// `--select-file`; nil: every file.
    package var selection: FileSelection?
    /// `--bt-tracker`: more trackers than the torrent's own.
    package var trackers: [String] = []
    /// How long a magnet may wait for its metadata before it fails (`--bt-metadata-timeout`).
    package var metadataTimeout: Duration = TorrentJob.defaultMetadataTimeout
    /// Read the resume data a stopped run left (`--no-resume`: start over, as for HTTP).
    package var resume = true
    /// How long it seeds once its files are verified (`--seed-ratio`, `--seed-time`).
    package var seeding = Seeding(ratio: 1.0, time: nil)

    /// When seeding ends: at the first bound reached; with neither, only when stopped.
    package struct Seeding: Sendable, Equatable {
        /// Bytes sent over bytes of the selected files; nil for no ratio bound.
        package var ratio: Double?
        /// nil for no time bound.
        package var time: Duration?
        /// Whether it seeds at all.
        package var seeds: Bool

        package init(ratio: Double?, time: Duration?) {
            self.ratio = ratio
            self.time = time
            seeds = true
        }

        /// No seeding (`--seed-time 0`).
        package static var none: Seeding {
            var seeding = Seeding(ratio: nil, time: nil)
            seeding.seeds = false
            return seeding
        }

        /// `--seed-ratio` and `--seed-time` (minutes) as aria2 reads them: `--seed-time 0` does not seed; a
        /// ratio of 0 is no ratio bound; with neither given, ratio 1.0.
        package static func given(ratio: Double?, minutes: Double?) -> Seeding {
            if let minutes, minutes == 0 { return .none }
            let bound = ratio ?? (minutes == nil ? 1.0 : nil)
            return Seeding(ratio: bound.flatMap { $0 > 0 ? $0 : nil },
                           time: minutes.map { .milliseconds(Int64(($0 * 60_000).rounded())) })
        }

        /// Whether seeding is over after `elapsed`, having sent `uploaded` of `size` bytes.
        package func isOver(uploaded: Int64, size: Int64, elapsed: Duration) -> Bool {
            guard seeds else { return true }
            if let ratio, Double(uploaded) >= ratio * Double(max(size, 1)) { return true }
            if let time, elapsed >= time { return true }
            return false
        }
    }

    /// Three minutes: a magnet whose peers are found by DHT usually has its metadata within a minute; one
    /// that has none by then rarely gets it.
    package static let defaultMetadataTimeout = Duration.seconds(180)

    package init(source: Source, directory: String) {
        self.source = source
        self.directory = directory
    }

    /// What the lines name the download by: the .torrent's path or the magnet.
    package var label: String {
        switch source {
        case .file(let path): path
        case .metainfo(_, let name): name
        case .magnet(let link): link
        }
    }

    /// Whether a command-line argument is a magnet link.
    package static func isMagnet(_ argument: String) -> Bool {
        argument.utf8.count > 7 && argument.prefix(7).lowercased() == "magnet:"
    }

    /// Whether a command-line argument names a local .torrent file (not a URL).
    package static func isTorrentFile(_ argument: String) -> Bool {
        !argument.contains("://") && argument.lowercased().hasSuffix(".torrent")
    }

    /// The argument as a torrent source, nil when it is neither.
    package static func source(of argument: String) -> Source? {
        if isMagnet(argument) { return .magnet(argument) }
        if isTorrentFile(argument) { return .file(argument) }
        return nil
    }
}
