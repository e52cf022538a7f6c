import Crypto
import Foundation

/// Checksums of files, computed by streaming them in 1 MiB reads (never the whole file in memory).
package enum FileDigest {
    package enum Algorithm: String, Sendable, CaseIterable, Codable {
        case sha256, sha1, md5

        /// Hex digits in a digest of this algorithm.
        var hexLength: Int {
            switch self {
            case .sha256: 64
            case .sha1: 40
            case .md5: 32
            }
        }
    }

    /// The lower-case hex digest of the file at `path`.
    package static func hex(of path: String, algorithm: Algorithm = .sha256) throws(HaulError) -> String {
        switch algorithm {
        case .sha256: try hex(of: path, using: SHA256())
        case .sha1: try hex(of: path, using: Insecure.SHA1())
        case .md5: try hex(of: path, using: Insecure.MD5())
        }
    }

    /// The digest of the file open as `fd`, from its first byte (positional reads: the offset is not moved).
    /// `path` names it in errors.
    static func hex(ofDescriptor fd: Int32, path: String, algorithm: Algorithm) throws(HaulError) -> String {
        switch algorithm {
        case .sha256: try hex(ofDescriptor: fd, path: path, using: SHA256())
        case .sha1: try hex(ofDescriptor: fd, path: path, using: Insecure.SHA1())
        case .md5: try hex(ofDescriptor: fd, path: path, using: Insecure.MD5())
        }
    }

    private static func hex<H: HashFunction>(of path: String, using hasher: H) throws(HaulError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw PartFile.error("cannot read", path) }
        defer { close(fd) }
        return try hex(ofDescriptor: fd, path: path, using: hasher)
    }

    private static func hex<H: HashFunction>(ofDescriptor fd: Int32, path: String, using hasher: H) throws(HaulError)
        -> String
    {
        var hasher = hasher
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: Int64 = 0
        while true {
            let n: Int
            do {
                n = try FileIO.read(fd, into: &buffer, at: offset)
            } catch {
                throw PartFile.error("cannot read", path, error.code)
            }
            if n == 0 { break }
            offset += Int64(n)
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[..<n])) }
        }
        return hasher.finalize().map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}
