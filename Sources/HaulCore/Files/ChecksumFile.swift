import FoundationEssentials
import Glibc

/// A list of digests by file name, as `sha256sum` writes it (`SHA256SUMS`, `*.sha256`): `HEX  NAME` or
/// `HEX *NAME`, one per line; also the BSD form `SHA256 (NAME) = HEX`. The algorithm is the tag's, or else the
/// digest's length (128 hex digits sha512, 64 sha256, 40 sha1, 32 md5). Names are matched by their last path
/// component; blank lines and `#` comments are skipped.
package enum ChecksumFile {
    /// The most a checksum file may hold.
    static let sizeLimit = 16 << 20

    /// Reads `path`: the digest of each listed name, or a one-line reason naming the line at fault.
    package static func read(_ path: String) -> Result<[String: Checksum], HaulError> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(PartFile.error("--checksum-file: cannot read", path)) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count: Int
            do { count = try FileIO.read(fd, into: &chunk) } catch {
                return .failure(PartFile.error("--checksum-file: cannot read", path, error.code))
            }
            if count == 0 { break }
            bytes += chunk[..<count]
            if bytes.count > sizeLimit {
                return .failure(HaulError(.usage, "--checksum-file \(path): larger than \(sizeLimit >> 20) MiB"))
            }
        }
        return parse(String(decoding: bytes, as: UTF8.self), source: path)
    }
}
