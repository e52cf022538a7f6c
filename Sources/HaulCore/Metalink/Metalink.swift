import FoundationEssentials
import Glibc

/// A metalink document (RFC 5854 Metalink 4, `.meta4`, or the older Metalink 3.0, `.metalink`) read into plain
/// values: the files it describes, each with its sources and hashes. `Metalink.parse` reads one; `MetalinkJobs`
/// turns one into downloads.
package struct Metalink: Sendable, Equatable {
    package struct File: Sendable, Equatable {
        /// As the document gives it: it may hold directories (`dir/name.iso`), which `MetalinkJobs` checks.
        package var name: String
        package var size: Int64?
        /// Whole-file digests of the algorithms haul computes, in document order (others are left out).
        package var hashes: [Checksum] = []
        /// Piece digests of an algorithm haul computes, when the document gives them.
        package var pieces: PieceHashes?
        /// Its sources in document order, each an http(s) URL (others are dropped, and noted).
        package var urls: [DownloadSource] = []

        package init(name: String, size: Int64? = nil, hashes: [Checksum] = [], pieces: PieceHashes? = nil,
                     urls: [DownloadSource] = []) {
            self.name = name
            self.size = size
            self.hashes = hashes
            self.pieces = pieces
            self.urls = urls
        }

        /// The strongest of its whole-file digests (SHA-512 over SHA-256 over SHA-1 over MD5).
        package var strongestHash: Checksum? {
            let order: [DigestAlgorithm] = [.sha512, .sha256, .sha1, .md5]
            return hashes.min { order.firstIndex(of: $0.algorithm)! < order.firstIndex(of: $1.algorithm)! }
        }
    }

    package var files: [File]
    /// What was read but left out, one line each ("file 'x.iso': a torrent (metaurl) is not supported").
    package var notes: [String] = []

    package init(files: [File], notes: [String] = []) {
        self.files = files
        self.notes = notes
    }

    /// The bounds a document is read within: past any of them the whole document is refused with one line,
    /// and reading stops there (a document of a million URLs is refused at the 100,001st, its memory never
    /// more than what was read so far).
    package struct Limits: Sendable {
        package var bytes = 16 << 20
        package var files = 10_000
        package var urlsPerFile = 1_000
        package var urls = 100_000
        package var piecesPerFile = 1_000_000
        /// The text of one element (a URL, a name, a hash).
        package var textBytes = 8 << 10

        package init() {}
    }

    /// The media types a server answers a metalink with (RFC 5854's, and 3.0's).
    package static let mediaTypes = ["application/metalink4+xml", "application/metalink+xml"]

    /// Whether `path` names a metalink by its extension (`.meta4`, `.metalink`), as `haul FILE` takes one.
    package static func hasMetalinkExtension(_ path: String) -> Bool {
        let lower = path.lowercased()
        return lower.hasSuffix(".meta4") || lower.hasSuffix(".metalink")
    }

    /// Reads a whole document. The failure is one line without the document's name ("line 3: ..."), which the
    /// caller puts in front.
    package static func parse(_ bytes: some Collection<UInt8>, limits: Limits = Limits()) -> Result<Metalink, MetalinkProblem> {
        let reader: MetalinkReader
        do {
            reader = try MetalinkReader(limits: limits)
        } catch {
            return .failure(error)
        }
        let chunk = 64 << 10
        var start = bytes.startIndex
        while true {
            let end = bytes.index(start, offsetBy: chunk, limitedBy: bytes.endIndex) ?? bytes.endIndex
            let last = end == bytes.endIndex
            if let problem = reader.feed(Array(bytes[start..<end]), last: last) { return .failure(problem) }
            if last { break }
            start = end
        }
        return reader.result()
    }

    /// Reads the document in the file at `path`, at most `limits.bytes` of it: a longer one is refused before
    /// it is all read.
    package static func read(path: String, limits: Limits = Limits()) -> Result<Metalink, MetalinkProblem> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            return .failure(MetalinkProblem("cannot read: \(String(cString: strerror(errno)))", category: .fileIO))
        }
        defer { close(fd) }
        let reader: MetalinkReader
        do {
            reader = try MetalinkReader(limits: limits)
        } catch {
            return .failure(error)
        }
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var offset: Int64 = 0
        while true {
            let n: Int
            do {
                n = try FileIO.read(fd, into: &buffer, at: offset)
            } catch {
                return .failure(MetalinkProblem("cannot read: \(error)", category: .fileIO))
            }
            offset += Int64(n)
            if let problem = reader.feed(Array(buffer[..<n]), last: n == 0) { return .failure(problem) }
            if n == 0 { break }
        }
        return reader.result()
    }
}

/// Why a metalink document is refused: one line, and the kind of failure (a document that is not a metalink,
/// or breaks a bound, is `usage` as read from a file; the caller that downloaded it may call it `protocol`).
package struct MetalinkProblem: Error, Sendable, Equatable {
    package var message: String
    package var category: FailureCategory

    package init(_ message: String, category: FailureCategory = .usage) {
        self.message = message
        self.category = category
    }
}
