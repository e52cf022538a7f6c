import Crypto
import Foundation

/// Checksums of files, computed by streaming them in 1 MiB reads (never the whole file in memory).
package enum FileDigest {
    package enum Algorithm: String, Sendable, CaseIterable, Codable {
        case sha512, sha256, sha1, md5

        /// Hex digits in a digest of this algorithm.
        var hexLength: Int {
            switch self {
            case .sha512: 128
            case .sha256: 64
            case .sha1: 40
            case .md5: 32
            }
        }
    }

    /// The lower-case hex digest of the file at `path`.
    package static func hex(of path: String, algorithm: Algorithm = .sha256) throws(HaulError) -> String {
        switch algorithm {
        case .sha512: try hex(of: path, using: SHA512())
        case .sha256: try hex(of: path, using: SHA256())
        case .sha1: try hex(of: path, using: Insecure.SHA1())
        case .md5: try hex(of: path, using: Insecure.MD5())
        }
    }

    /// The digest of the file open as `fd`, from its first byte (positional reads: the offset is not moved).
    /// `path` names it in errors.
    static func hex(ofDescriptor fd: Int32, path: String, algorithm: Algorithm) throws(HaulError) -> String {
        switch algorithm {
        case .sha512: try hex(ofDescriptor: fd, path: path, using: SHA512())
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

/// A file's digest computed while its bytes are written: fed each write in order from offset 0, it holds the
/// digest of the whole file once the writes cover it, with no read of the file afterwards. A write anywhere
/// else (a resume, segments) makes it give up: the file is then read back once at the end.
struct RunningDigest {
    private enum Hashing {
        case sha512(SHA512), sha256(SHA256), sha1(Insecure.SHA1), md5(Insecure.MD5)
    }

    private var hashing: Hashing
    /// The offset the next write must start at.
    private(set) var next: Int64 = 0
    private(set) var broken = false

    init(_ algorithm: FileDigest.Algorithm) {
        switch algorithm {
        case .sha512: hashing = .sha512(SHA512())
        case .sha256: hashing = .sha256(SHA256())
        case .sha1: hashing = .sha1(Insecure.SHA1())
        case .md5: hashing = .md5(Insecure.MD5())
        }
    }

    mutating func feed(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        guard !broken else { return }
        guard offset == next else {
            broken = true
            return
        }
        switch hashing {
        case .sha512(var h): h.update(bufferPointer: bytes); hashing = .sha512(h)
        case .sha256(var h): h.update(bufferPointer: bytes); hashing = .sha256(h)
        case .sha1(var h): h.update(bufferPointer: bytes); hashing = .sha1(h)
        case .md5(var h): h.update(bufferPointer: bytes); hashing = .md5(h)
        }
        next += Int64(bytes.count)
    }

    /// The hex digest, when the writes covered exactly `size` bytes from 0 in order; nil otherwise.
    func hex(ofSize size: Int64) -> String? {
        guard !broken, next == size else { return nil }
        let bytes: [UInt8] = switch hashing {
        case .sha512(let h): Array(h.finalize())
        case .sha256(let h): Array(h.finalize())
        case .sha1(let h): Array(h.finalize())
        case .md5(let h): Array(h.finalize())
        }
        return bytes.map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}
