/// A digest a checksum may name (`--checksum ALGO=HEX`, a checksum file, aria2's `checksum`).
package enum DigestAlgorithm: String, Sendable, CaseIterable, Codable {
    case sha512, sha256, sha1, md5

    /// Hex digits in a digest of this algorithm.
    package var hexLength: Int {
        switch self {
        case .sha512: 128
        case .sha256: 64
        case .sha1: 40
        case .md5: 32
        }
    }
}
