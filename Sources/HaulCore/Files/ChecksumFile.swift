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

    static func parse(_ text: String, source: String) -> Result<[String: Checksum], HaulError> {
        var digests: [String: Checksum] = [:]
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw
            if line.allSatisfy({ $0 == " " || $0 == "\t" }) || line.hasPrefix("#") { continue }
            guard let (algorithm, hex, name) = entry(String(line)) else {
                return .failure(HaulError(.usage, "--checksum-file \(source) line \(index + 1): not 'HEX  NAME' or 'ALGO (NAME) = HEX'"))
            }
            switch Checksum.parsed("\(algorithm)=\(hex)") {
            case .success(let checksum): digests[FilePath.baseName(of: name)] = checksum
            case .failure(let problem):
                return .failure(HaulError(.usage, "--checksum-file \(source) line \(index + 1): " + problem.phrase))
            }
        }
        return .success(digests)
    }

    /// (algorithm, hex, name) of one line.
    private static func entry(_ line: String) -> (String, String, String)? {
        // BSD: "SHA256 (name) = hex"
        if let open = line.firstIndex(of: "("), let close = line.ranges(of: ") = ").last,
            open < close.lowerBound, !line[..<open].contains(" ") || line[..<open].hasSuffix(" ")
        {
            let tag = line[..<open].trimmingWhitespace()
            if !tag.isEmpty, !tag.contains(" ") {
                return (tag, line[close.upperBound...].trimmingWhitespace(),
                        String(line[line.index(after: open)..<close.lowerBound]))
            }
        }
        // GNU: "hex  name" or "hex *name"
        guard let space = line.firstIndex(of: " ") else { return nil }
        let hex = String(line[..<space])
        var rest = line[line.index(after: space)...]
        if rest.first == " " || rest.first == "*" { rest = rest.dropFirst() }
        guard !rest.isEmpty else { return nil }
        let algorithm: String
        switch hex.count {
        case 128: algorithm = "sha512"
        case 64: algorithm = "sha256"
        case 40: algorithm = "sha1"
        case 32: algorithm = "md5"
        default: return nil
        }
        return (algorithm, hex, String(rest))
    }
}
