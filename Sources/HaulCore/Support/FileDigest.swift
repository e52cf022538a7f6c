import COpenSSL
import FoundationEssentials
import Glibc

/// Checksums of files, computed by streaming them in 1 MiB reads (never the whole file in memory).
package enum FileDigest {
    package typealias Algorithm = DigestAlgorithm

    /// The lower-case hex digest of the file at `path`.
    package static func hex(of path: String, algorithm: Algorithm = .sha256) throws(HaulError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw PartFile.error("cannot read", path) }
        defer { close(fd) }
        return try hex(ofDescriptor: fd, path: path, algorithm: algorithm)
    }

    /// The digest of the file open as `fd`, from its first byte (positional reads: the offset is not moved).
    /// `path` names it in errors.
    static func hex(ofDescriptor fd: Int32, path: String, algorithm: Algorithm) throws(HaulError) -> String {
        guard let context = DigestContext(algorithm) else { throw DigestContext.unavailable(algorithm) }
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
            buffer.withUnsafeBytes { context.update(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
        }
        guard let hex = context.hex() else { throw DigestContext.unavailable(algorithm) }
        return hex
    }
}

/// One running digest in OpenSSL's libcrypto (EVP). OpenSSL is what libcurl's TLS loads at every start, so the
/// checksums add no second crypto library to the binary.
///
/// A reference type around OpenSSL's context: one owner feeds it at a time (a part file reaches it only under
/// its lock), which is what makes it safe to send.
final class DigestContext: @unchecked Sendable {
    private let context: OpaquePointer

    /// Nil when this OpenSSL refuses the algorithm (a FIPS-only configuration refuses MD5).
    init?(_ algorithm: FileDigest.Algorithm) {
        let number: Int32 = switch algorithm {
        case .sha512: Int32(HAUL_DIGEST_SHA512)
        case .sha256: Int32(HAUL_DIGEST_SHA256)
        case .sha1: Int32(HAUL_DIGEST_SHA1)
        case .md5: Int32(HAUL_DIGEST_MD5)
        }
        guard let context = haul_digest_new(number) else { return nil }
        self.context = context
    }

    deinit { haul_digest_free(context) }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        // OpenSSL's software digests do not fail an update of memory they are given.
        _ = haul_digest_update(context, base, bytes.count)
    }

    /// The lower-case hex digest of what was fed so far; the context goes on. Nil if OpenSSL fails it.
    func hex() -> String? {
        var out = [UInt8](repeating: 0, count: 64)
        let length = Int(haul_digest_peek(context, &out))
        guard length > 0 else { return nil }
        var text = [UInt8]()
        text.reserveCapacity(2 * length)
        for byte in out[..<length] {
            text.append(Self.hexDigits[Int(byte >> 4)])
            text.append(Self.hexDigits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    static func unavailable(_ algorithm: FileDigest.Algorithm) -> HaulError {
        HaulError(.checksum, "this system's OpenSSL does not compute \(algorithm.rawValue) digests")
    }
}

/// A file's digest computed while its bytes are written: fed each write in order from offset 0, it holds the
/// digest of the whole file once the writes cover it, with no read of the file afterwards. A write anywhere
/// else (a resume, segments) makes it give up: the file is then read back once at the end.
/// (Fed in place, as a part file keeps it: a copy would share the running OpenSSL context.)
struct RunningDigest {
    /// Nil when OpenSSL refuses the algorithm (then `broken` from the start: the file is read back).
    private let context: DigestContext?
    /// The offset the next write must start at.
    private(set) var next: Int64 = 0
    private(set) var broken = false

    init(_ algorithm: FileDigest.Algorithm) {
        context = DigestContext(algorithm)
        broken = context == nil
    }

    mutating func feed(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        guard !broken, let context else { return }
        guard offset == next else {
            broken = true
            return
        }
        context.update(bytes)
        next += Int64(bytes.count)
    }

    /// The hex digest, when the writes covered exactly `size` bytes from 0 in order; nil otherwise.
    func hex(ofSize size: Int64) -> String? {
        guard !broken, next == size else { return nil }
        return context?.hex()
    }
}
