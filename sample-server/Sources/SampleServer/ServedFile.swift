import NIOCore

/// One file the server can send: its metadata and where its bytes come from.
struct ServedFile: Sendable {
    enum Content: Sendable {
        case generated(GeneratedFile)
        case memory(ByteBuffer)
        /// A regular file on disk, by its resolved absolute path.
        case disk(String)
    }

    let name: String
    let size: Int
    /// Modification time, in seconds since 1970.
    let modified: Int
    let content: Content

    var contentType: String {
        let lowercased = name.lowercased()
        return lowercased.hasSuffix(".jpg") || lowercased.hasSuffix(".jpeg") ? "image/jpeg" : "application/octet-stream"
    }

    /// The validators clients use to detect a change; `salt` (from ``SampleServerFaults/etagSalt``) changes both.
    func validators(salt: String?) -> Validators {
        var hash = StableHash.fnv1a(name)
        hash = StableHash.fnv1a("\u{0}\(size)\u{0}\(modified)", into: hash)
        var lastModified = modified
        if let salt {
            hash = StableHash.fnv1a("\u{0}\(salt)", into: hash)
            lastModified += 1 + Int(StableHash.fnv1a(salt) % 31_536_000)
        }
        let tag = String(hash, radix: 16)
        return Validators(
            etag: "\"\(String(repeating: "0", count: 16 - tag.count))\(tag)-\(String(size, radix: 16))\"",
            lastModified: HTTPDate.imfFixdate(lastModified), modifiedSeconds: lastModified)
    }
}

/// A file's `ETag` (strong) and `Last-Modified` header values.
struct Validators: Sendable, Equatable {
    let etag: String
    let lastModified: String
    /// `lastModified` as seconds since 1970, for `If-Modified-Since`.
    var modifiedSeconds = 0

    /// Whether an `If-Range` value still names this representation: a strong ETag that matches exactly, or the
    /// exact `Last-Modified` date. Weak tags never match (RFC 9110, section 13.1.5).
    func matches(ifRange value: String) -> Bool {
        let value = value.trimmingASCIISpaces()
        if value.hasPrefix("W/") {
            return false
        }
        if value.hasPrefix("\"") {
            return value == etag
        }
        return value == lastModified
    }
}
