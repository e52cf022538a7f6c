import FoundationEssentials
import Glibc

/// What `NAME.part.json` records about `NAME.part`: enough to continue it later, or to know it must not be.
///
/// Invariant: every range in `completed` was fsynced in `NAME.part` before this state was written, so a
/// crash at any moment loses at most the bytes received since the last checkpoint.
package struct ResumeState: Codable, Equatable, Sendable {
    static let formatVersion = 1

    var version = ResumeState.formatVersion
    /// The URL, its password masked (`URLRedaction`): a secret is never written to disk.
    var url: String
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

    /// The most a state file may hold: its ranges are merged, so even a file of thousands of holes is far below.
    static let sizeLimit = 1 << 20

    /// Reads the state file `name`; `.missing` when there is none, `.unreadable` when it cannot be trusted
    /// (not JSON of this version, too large, or not a regular file: a link there is not followed).
    static func load(from directory: OutputDirectory, name: String) -> Loaded {
        switch directory.readSmallFile(name, limit: sizeLimit) {
        case .missing: return .missing
        case .unusable: return .unreadable
        case .bytes(let bytes):
            guard let state = try? JSONDecoder().decode(ResumeState.self, from: Data(bytes)),
                state.version == formatVersion, state.isCoherent
            else { return .unreadable }
            return .found(state)
        }
    }

    /// `load` by path (tests, tools, the aria2 face's `bitfield`).
    package static func load(from path: String) -> Loaded {
        guard let directory = try? OutputDirectory(FilePath.parent(of: path)) else { return .unreadable }
        return load(from: directory, name: FilePath.baseName(of: path))
    }

    package enum Loaded: Equatable {
        case missing
        case unreadable
        case found(ResumeState)
    }

    /// Replaces the state file `name` atomically and durably (a unique temporary file created exclusively,
    /// mode 0600, fsync, rename).
    func save(to directory: OutputDirectory, name: String, durable: Bool = true) throws(HaulError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data: Data
        do { data = try encoder.encode(self) } catch { throw HaulError(.other, "cannot encode resume state") }
        try directory.replace(name, with: [UInt8](data), durable: durable)
    }

    /// `save` by path (tests and tools).
    func save(to path: String) throws(HaulError) {
        try save(to: OutputDirectory(FilePath.parent(of: path)), name: FilePath.baseName(of: path))
    }
}

/// A half-open byte range `[start, end)`.
package struct ByteRange: Codable, Equatable, Sendable {
    package var start: Int64
    package var end: Int64

    package init(_ start: Int64, _ end: Int64) {
        self.start = start
        self.end = end
    }

    package var count: Int64 { end - start }

    /// `ranges` sorted and merged (touching or overlapping ranges become one; empty ones go).
    package static func merged(_ ranges: [ByteRange]) -> [ByteRange] {
        var merged: [ByteRange] = []
        for range in ranges.sorted(by: { $0.start < $1.start }) where range.end > range.start {
            if let last = merged.last, range.start <= last.end {
                merged[merged.count - 1].end = Swift.max(last.end, range.end)
            } else {
                merged.append(range)
            }
        }
        return merged
    }
}
