import FoundationEssentials

/// The list itself, from its text: no file is read here.
extension ChecksumFile {
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
