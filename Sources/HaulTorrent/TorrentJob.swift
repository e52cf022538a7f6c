import HaulCore

/// A torrent or magnet to download, with the options of its run.
package struct TorrentJob: Sendable, Equatable {
    package enum Source: Sendable, Equatable {
        /// A .torrent file's path.
        case file(String)
        case magnet(String)
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
