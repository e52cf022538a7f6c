/// Something that happened to a download and does not stop it, said as data: the line reporters word it
/// (`sentence`), the TUI words it its own way, the store and the socket carry it as it is. Nothing reads a
/// fact back out of a sentence.
package enum DownloadFact: Sendable, Equatable, Codable {
    /// A transient failure ended an attempt; attempt `attempt` of `of` retries starts after `delaySeconds`,
    /// at byte `resumeAt` (0: from the start).
    case retrying(attempt: Int, of: Int, delaySeconds: Double, resumeAt: Int64, reason: HaulError)
    /// `part` is not continued: the download starts over from byte 0.
    case resumeRefused(part: String, reason: ResumeRefusal)
    /// `part` is not written into and is left as it is; the download takes the next free name (or fails,
    /// by the existing-file policy).
    case partLeftAlone(part: String, reason: PartConflict)
    /// A file appeared at `wanted` during the download; this one was saved as `savedAs` beside it.
    case savedAs(wanted: String, savedAs: String)
    /// A download asked to use several connections goes on over one.
    case oneConnection(reason: OneConnectionReason)
    /// `-s N`: the server takes ranges and the file is large enough: `connections` fetch it, each a range
    /// of its own.
    case split(connections: Int)
    /// `-s N`: the connection that went on alone after the race slowed to `bytesPerSecond`, under half of
    /// what they brought together (a limit that starts after the first bytes): all `connections` fetch again.
    case splitAgain(connections: Int, bytesPerSecond: Double)
    /// `-s N`: one connection failed (`reason`: the server refused it, as one that limits a client's
    /// connections does, or it was dropped); what it had left went to the `connectionsLeft` still fetching.
    case connectionDropped(connectionsLeft: Int, reason: HaulError)
    /// After a crash, `bytes` that `part` should have held past its last checkpoint failed their check (a
    /// power loss leaves zeros or old bytes there): they are fetched again.
    case damagedRefetched(part: String, bytes: Int64)
    /// `file` is whole already: an earlier run of this URL was stopped after it took its name and before its
    /// state file went. The state is removed and nothing is fetched.
    case finishedEarlier(file: String)
    /// A cancelled JPEG left the prefix it had received as a picture at `path`.
    case previewSaved(path: String)
    /// The download's own rate cap (all its connections together), nil for none: as it was added, or as
    /// changed since (the TUI, aria2's `changeOption`).
    case limited(bytesPerSecond: Int64?)
    /// The download was given a new address (`url`, masked) that serves the same file (`haul refresh`,
    /// `--refresh-with`, aria2's `changeUri`): it continues from the `kept` bytes on disk.
    case refreshed(url: String, kept: Int64)
    /// A download from several sources: the source at `url` (password masked) serves another file than the
    /// first answer described; it is never asked again in this download and nothing it sent is kept.
    case sourceDropped(url: String, reason: SourceMismatch)
    /// A download from several sources: the source at `url` (password masked) failed (`reason`); what it had
    /// left goes to the sources still working. A retry asks it again.
    case sourceFailed(url: String, reason: HaulError)
    /// A metalink's piece `index` (from 0) failed its hash on the whole part and was fetched again from the
    /// source at `from`; `url` is a source whose bytes for it hashed otherwise (dropped), nil when none did.
    case pieceRefetched(index: Int, url: String?, from: String)
    /// `haul rm --files` (the TUI's `D`): the `files` haul wrote for this download, `bytes` in all, were deleted
    /// (the finished file or its part, its state, journal and preview); what was not haul's was left.
    case filesRemoved(files: Int, bytes: Int64)
    /// A category of the config file took the download (by its final name or media type, or as asked with
    /// `--category`): its file goes to `directory`. Said once the name is known, before the first byte.
    case category(name: String, directory: String)
    /// A torrent's selected files are all verified and have their names; it now sends its pieces to other
    /// peers until its ratio (bytes sent over bytes of the selected files) reaches `ratio`, or for `minutes`;
    /// nil for a bound not set (both nil: until it is stopped).
    case seeding(ratio: Double?, minutes: Double?)
    /// A torrent stopped seeding, having sent `uploaded` bytes: its ratio is `ratio`.
    case seeded(uploaded: Int64, ratio: Double)

    /// One name per case, for scripts (`kind` in `--json` lines and on the socket).
    package var kind: String {
        switch self {
        case .retrying: "retrying"
        case .resumeRefused: "resume-refused"
        case .partLeftAlone: "part-left-alone"
        case .savedAs: "saved-as"
        case .oneConnection: "one-connection"
        case .split: "split"
        case .splitAgain: "split-again"
        case .connectionDropped: "connection-dropped"
        case .damagedRefetched: "damaged-refetched"
        case .finishedEarlier: "finished-earlier"
        case .previewSaved: "preview-saved"
        case .limited: "limit"
        case .refreshed: "refreshed"
        case .sourceDropped: "source-dropped"
        case .sourceFailed: "source-failed"
        case .pieceRefetched: "piece-refetched"
        case .filesRemoved: "files-removed"
        case .category: "category"
        case .seeding: "seeding"
        case .seeded: "seeded"
        }
    }
}

/// How a source of a download from several shows that it serves another file.
package enum SourceMismatch: Sendable, Equatable, Codable {
    /// It says the file has `size` bytes where the first answer said `expected`.
    case otherSize(size: Int64, expected: Int64)
    /// Its bytes from `offset` on differ from those the other sources sent there.
    case otherBytes(offset: Int64)
}

/// Why a partial download is not continued.
package enum ResumeRefusal: Sendable, Equatable, Codable {
    /// A part file with bytes and no state file beside it.
    case noState
    case unreadableState
    /// The state is another URL's (`url` masked); with `--overwrite` its part is taken anyway.
    case otherURL(url: String)
    /// The state claims more bytes than the part file holds.
    case shorterThanState
    /// `--no-resume`.
    case notWanted
    /// The server gave neither ETag nor Last-Modified: nothing to send in If-Range.
    case noValidators
    /// The server answered 416 to a resume at `offset` and the part is not the whole file.
    case refusedAt(offset: Int64)
    /// The file changed on the server (its validators differ from the state's).
    case validatorsChanged
    /// The server answered the Range request with `status` (a 200: the whole file).
    case rangeIgnored(status: Int)
}

/// Why a candidate `.part` is left alone.
package enum PartConflict: Sendable, Equatable, Codable {
    /// Another URL's resumable download (`url` masked).
    case otherURL(url: String)
    /// Not a file haul may write into.
    case untrusted(PartDistrust)
}

/// What makes an existing `.part` one haul must not open or write through.
package enum PartDistrust: String, Sendable, Equatable, Codable {
    case symbolicLink = "symbolic-link"
    case notRegularFile = "not-regular-file"
    case otherOwner = "other-owner"
    case otherHardLinks = "other-hard-links"

    /// "is a symbolic link", to follow a file name.
    package var phrase: String {
        switch self {
        case .symbolicLink: "is a symbolic link"
        case .notRegularFile: "is not a regular file"
        case .otherOwner: "belongs to another user"
        case .otherHardLinks: "has other hard links"
        }
    }
}

/// Why a segmented download uses one connection.
package enum OneConnectionReason: Sendable, Equatable, Codable {
    /// The probe's Range request was answered with the whole file.
    case noRanges
    /// A segment's Range request was answered with `status`.
    case segmentRefused(status: Int)
    /// Every connection brought at least `bytesPerSecond` while they all ran: nothing limits one
    /// connection (a server on this machine or LAN), so the others stopped and gave their ranges back.
    case notLimited(bytesPerSecond: Double)
}
