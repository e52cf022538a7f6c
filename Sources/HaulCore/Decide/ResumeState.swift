/// What `NAME.part.json` records about `NAME.part`: enough to continue it later, or to know it must not be.
///
/// Invariant: every range in `completed` was fsynced in `NAME.part` before this state was written, so a
/// crash at any moment loses at most the bytes received since the last checkpoint.
package struct ResumeState: Codable, Equatable, Sendable {
    static let formatVersion = 1

    var version = ResumeState.formatVersion
    /// The URL, its password masked (`URLRedaction`): a secret is never written to disk.
    var url: String
    /// The server's validators. Over FTP and SFTP, which have none, the file's size and modification time
    /// stand for them, as the head haul makes for such a transfer carries them (`ResponseHead.remoteFile`).
    var etag: String?
    var lastModified: String?
    /// The whole file's size, when the server said it.
    package var total: Int64?
    /// Byte ranges on disk, half-open, sorted and merged.
    package var completed: [ByteRange]

    package init(url: String, etag: String?, lastModified: String?, total: Int64?, completed: [ByteRange] = []) {
        self.url = URLRedaction.masked(url)
        self.etag = etag
        self.lastModified = lastModified
        self.total = total
        self.completed = completed
    }

    /// How many bytes the completed ranges hold.
    package var completedBytes: Int64 {
        completed.reduce(0) { $0 + $1.count }
    }

    /// The bytes known good from offset 0 on.
    var contiguousPrefix: Int64 {
        guard let first = completed.first, first.start == 0 else { return 0 }
        return first.end
    }

    /// The validator for `If-Range`: the ETag when the server gave one, else Last-Modified.
    var validator: String? { etag ?? lastModified }

    /// Adds `range` to `completed`, keeping it sorted and merged.
    mutating func add(_ range: ByteRange) {
        guard range.end > range.start else { return }
        completed = ByteRange.merged(completed + [range])
    }

    /// What a state haul wrote always is: a size that is not negative, ranges that are not empty or
    /// negative and lie within it. One that is not (edited, or damaged) is unreadable, not a server's
    /// contradiction to blame on the next answer.
    var isCoherent: Bool {
        if let total, total < 0 { return false }
        return completed.allSatisfy { $0.start >= 0 && $0.end > $0.start && $0.end <= (total ?? .max) }
    }

    /// The state file beside a part file.
    static func path(forPart part: String) -> String { part + ".json" }

    /// Whether this state was written for `url` (compared as stored: password masked).
    package func belongs(to url: String) -> Bool { self.url == URLRedaction.masked(url) }
}
