import COpenSSL
import Foundation

/// A digest for the tests' expectations, taken from OpenSSL directly rather than through haul's `FileDigest`
/// (whose own answers `FileDigestTests` pins to the published test vectors).
public final class OpenSSLDigest {
    public enum Algorithm: Int32, Sendable { case sha512 = 0, sha256 = 1, sha1 = 2, md5 = 3 }

    private let context: OpaquePointer

    public init(_ algorithm: Algorithm) {
        context = haul_digest_new(algorithm.rawValue)!
    }

    deinit { haul_digest_free(context) }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        precondition(haul_digest_update(context, base, bytes.count) == 1)
    }

    public func update<Bytes: ContiguousBytes>(_ bytes: Bytes) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The lower-case hex digest of what was fed so far.
    public func hex() -> String {
        var out = [UInt8](repeating: 0, count: 64)
        let length = Int(haul_digest_peek(context, &out))
        precondition(length > 0)
        return out[..<length].map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// The hex digest of `bytes`.
    public static func hex<Bytes: ContiguousBytes>(_ algorithm: Algorithm, of bytes: Bytes) -> String {
        let digest = OpenSSLDigest(algorithm)
        digest.update(bytes)
        return digest.hex()
    }
}
