/// One file to fetch, where from and where it goes.
package struct DownloadJob: Sendable, Equatable, Codable {
    /// Where the file can come from: never empty. The first is the address the user gave (or a metalink's most
    /// preferred); the others are mirrors of the same file.
    package var sources: [DownloadSource]
    /// The first source's address: the one a download with a single source has, shown and matched by it.
    package var url: String {
        get { sources[0].url }
        set { sources[0].url = newValue }
    }
    /// The address the user first gave, kept once a refresh (`haul refresh`, `--refresh-with`, aria2's
    /// `changeUri`) has replaced the first source: what `{origin}` and `HAUL_ORIGIN_URL` name. nil while the
    /// first source is still that address (`origin` reads either).
    package var originURL: String?
    /// `--refresh-with`: run when a source stops serving the file (401, 403, 404, 410, or another file); the
    /// first line of its standard output is the new address.
    package var refreshWith: Hook?
    /// Created if missing.
    package var outputDirectory: String
    /// `-O`: the file name to use instead of the server's, in `outputDirectory`: a plain name (no `/`, not
    /// `.` or `..`), or the download fails with a usage error.
    package var outputName: String?
    package var existingFile = ExistingFilePolicy.rename
    /// Extra request headers, "Name: value".
    package var headers: [String] = []
    package var transfer = TransferOptions()
    /// Connections for this file (Range requests), 1...16, over all its sources together.
    package var segments = DownloadJob.defaultSegments
    /// `--max-connection-per-server`: at most this many of `segments` go to one host.
    package var connectionsPerServer = DownloadJob.defaultConnectionsPerServer
    /// `--sequential`: the connections of `segments` fetch the file front to back, so that it can be used
    /// (played, unpacked) while it arrives.
    package var sequential = false
    /// Retries on transient errors, each resuming where the last attempt stopped.
    package var retries = DownloadJob.defaultRetries

    /// The defaults the command line shows and a stored job without these fields takes.
    package static let defaultSegments = 1
    package static let defaultRetries = 5
    package static let defaultConnectionsPerServer = 4
    /// Continue from `NAME.part` and its state file when they match this URL.
    package var resume = true
    /// A cancelled JPEG leaves `STEM.partial.EXT` (`--no-partial-preview` turns this off).
    package var partialPreview = true
    /// Verify the finished file before it takes its name.
    package var checksum: Checksum?
    /// A metalink's piece hashes: each piece is checked as it completes.
    package var pieces: PieceHashes?
    /// Run when the download is done (`--on-complete`), or has failed (`--on-error`; not when cancelled).
    package var onComplete: Hook?
    package var onError: Hook?
    /// `-N`: when the file exists, ask the server only for a newer one (`If-Modified-Since` its mtime), and
    /// replace it with that; a `304` keeps it.
    package var timestamping = false
    /// The finished file takes the server's `Last-Modified` as its mtime (`--no-remote-time` turns it off).
    package var remoteTime = true
    /// The finished file is synced before it takes its name, and the directory after (the default).
    /// `--no-sync` turns both off: the name comes at once, and a power loss or system crash soon after may
    /// leave the named file short or empty (haul itself stopping loses nothing: every byte was handed to the
    /// kernel). The resume state's checkpoints stay durable either way.
    package var sync = true

    /// A directory `outputDirectory` must lie in, reached from it with no symbolic link followed (an RPC
    /// `dir`, checked against the allowed roots when the download was added: a link swapped in below the
    /// root before the download starts must not lead it elsewhere). nil: the path is opened as it is.
    package var confinedTo: String?
    /// `--start-at`: the download waits as `scheduled` until this wall-clock time (seconds since 1970, UTC),
    /// resolved from the user's HH:MM where it was added; nil: it may start at once.
    package var startAfter: Double?

    /// The download whose answer was a metalink that listed this file (aria2's `following`; that one's
    /// `followedBy` lists this one). Kept with the job, so that a restarted service still links them, and so
    /// that a file from a metalink is never followed as a metalink again, whatever its server answers.
    package var followedFrom: DownloadID?

    /// Which category of the config file places the file (`[categories.NAME]`): nil, by the rules once its
    /// final name and media type are known; `none` (`--category none`, or a directory given explicitly:
    /// `-d`, aria2's `dir`), none; another name (`--category NAME`), that one, whatever the file is.
    package var category: String?

    /// A torrent or magnet: libtorrent runs it (`TorrentSpec`), and `url` is only its label.
    package var torrent: TorrentSpec?

    package init(url: String, outputDirectory: String, outputName: String? = nil) {
        self.sources = [DownloadSource(url: url)]
        self.outputDirectory = outputDirectory
        self.outputName = outputName
    }

    /// A job from several sources: `sources` must not be empty.
    package init(sources: [DownloadSource], outputDirectory: String, outputName: String? = nil) {
        precondition(!sources.isEmpty, "a download needs a source")
        self.sources = sources
        self.outputDirectory = outputDirectory
        self.outputName = outputName
    }

    /// The address the user first gave: `originURL`, or the first source's while no refresh has replaced it.
    package var origin: String { originURL ?? url }

    /// The page given with `--referer` (or `referer=` in `-i`, aria2's `referer`): the value of the job's
    /// `Referer` header, which is where the option keeps it.
    package var referer: String? {
        for header in headers {
            let parts = header.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            func trimmed(_ text: Substring) -> String {
                String(text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
            }
            guard parts.count == 2, trimmed(parts[0]).lowercased() == "referer" else { continue }
            return trimmed(parts[1])
        }
        return nil
    }

    /// Makes `url` the first source, in place of the address that stopped working; the address first given is
    /// kept in `originURL` (set once). A mirror equal to `url` goes: it is the first source now.
    package mutating func refresh(to url: String) {
        if originURL == nil { originURL = self.url }
        sources.removeAll { $0.url == url }
        if sources.isEmpty { sources = [DownloadSource(url: url)] } else { sources[0].url = url }
    }

    /// The mirrors: every source after the first.
    package var mirrors: ArraySlice<DownloadSource> {
        sources.dropFirst()
    }

    private enum CodingKeys: String, CodingKey {
        case url, sources, originURL, refreshWith, connectionsPerServer, outputDirectory, outputName, existingFile,
            headers, transfer, segments, retries, resume, partialPreview, checksum, pieces, onComplete, onError, timestamping, remoteTime, sync, confinedTo,
            followedFrom, startAfter
        case sequential, category, torrent
    }

    /// A job stored by an older haul, or sent by an older client, lacks the options added since: they take
    /// their defaults. `url` and `outputDirectory` are required; `sources`, when there, are every source (its
    /// first is `url`'s).
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(url: try container.decode(String.self, forKey: .url),
                  outputDirectory: try container.decode(String.self, forKey: .outputDirectory),
                  outputName: try container.decodeIfPresent(String.self, forKey: .outputName))
        if let sources = try container.decodeIfPresent([DownloadSource].self, forKey: .sources), !sources.isEmpty {
            self.sources = sources
        }
        originURL = try container.decodeIfPresent(String.self, forKey: .originURL)
        refreshWith = try container.decodeIfPresent(Hook.self, forKey: .refreshWith)
        let defaults = DownloadJob(url: url, outputDirectory: outputDirectory)
        connectionsPerServer = try container.decodeIfPresent(Int.self, forKey: .connectionsPerServer)
            ?? defaults.connectionsPerServer
        existingFile = try container.decodeIfPresent(ExistingFilePolicy.self, forKey: .existingFile) ?? defaults.existingFile
        headers = try container.decodeIfPresent([String].self, forKey: .headers) ?? defaults.headers
        transfer = try container.decodeIfPresent(TransferOptions.self, forKey: .transfer) ?? defaults.transfer
        segments = try container.decodeIfPresent(Int.self, forKey: .segments) ?? defaults.segments
        retries = try container.decodeIfPresent(Int.self, forKey: .retries) ?? defaults.retries
        resume = try container.decodeIfPresent(Bool.self, forKey: .resume) ?? defaults.resume
        partialPreview = try container.decodeIfPresent(Bool.self, forKey: .partialPreview) ?? defaults.partialPreview
        checksum = try container.decodeIfPresent(Checksum.self, forKey: .checksum)
        pieces = try container.decodeIfPresent(PieceHashes.self, forKey: .pieces)
        onComplete = try container.decodeIfPresent(Hook.self, forKey: .onComplete)
        onError = try container.decodeIfPresent(Hook.self, forKey: .onError)
        timestamping = try container.decodeIfPresent(Bool.self, forKey: .timestamping) ?? false
        remoteTime = try container.decodeIfPresent(Bool.self, forKey: .remoteTime) ?? true
        sync = try container.decodeIfPresent(Bool.self, forKey: .sync) ?? true
        confinedTo = try container.decodeIfPresent(String.self, forKey: .confinedTo)
        sequential = try container.decodeIfPresent(Bool.self, forKey: .sequential) ?? false
        followedFrom = try container.decodeIfPresent(DownloadID.self, forKey: .followedFrom)
        startAfter = try container.decodeIfPresent(Double.self, forKey: .startAfter)
        category = try container.decodeIfPresent(String.self, forKey: .category)
        torrent = try container.decodeIfPresent(TorrentSpec.self, forKey: .torrent)
    }

    /// `url` always (an older haul reads it); `sources` only when there is more than the one `url` says.
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(url, forKey: .url)
        if sources.count > 1 || sources[0] != DownloadSource(url: url) {
            try container.encode(sources, forKey: .sources)
        }
        try container.encodeIfPresent(originURL, forKey: .originURL)
        try container.encodeIfPresent(refreshWith, forKey: .refreshWith)
        if connectionsPerServer != Self.defaultConnectionsPerServer {
            try container.encode(connectionsPerServer, forKey: .connectionsPerServer)
        }
        try container.encode(outputDirectory, forKey: .outputDirectory)
        try container.encodeIfPresent(outputName, forKey: .outputName)
        try container.encode(existingFile, forKey: .existingFile)
        try container.encode(headers, forKey: .headers)
        try container.encode(transfer, forKey: .transfer)
        try container.encode(segments, forKey: .segments)
        try container.encode(retries, forKey: .retries)
        try container.encode(resume, forKey: .resume)
        try container.encode(partialPreview, forKey: .partialPreview)
        try container.encodeIfPresent(checksum, forKey: .checksum)
        try container.encodeIfPresent(pieces, forKey: .pieces)
        try container.encodeIfPresent(onComplete, forKey: .onComplete)
        try container.encodeIfPresent(onError, forKey: .onError)
        try container.encode(timestamping, forKey: .timestamping)
        try container.encode(remoteTime, forKey: .remoteTime)
        try container.encode(sync, forKey: .sync)
        try container.encodeIfPresent(confinedTo, forKey: .confinedTo)
        if sequential { try container.encode(sequential, forKey: .sequential) }
        try container.encodeIfPresent(followedFrom, forKey: .followedFrom)
        try container.encodeIfPresent(startAfter, forKey: .startAfter)
        try container.encodeIfPresent(category, forKey: .category)
        try container.encodeIfPresent(torrent, forKey: .torrent)
    }
}
