import FoundationEssentials

/// RFC 6249 (Metalink/HTTP, as MirrorBrain servers send it) read from a response's headers: the mirrors of
/// `Link: <URL>; rel=duplicate; pri=N; geo=CC` and the checksum of RFC 3230's `Digest: SHA-256=BASE64`. Pure:
/// the probe that reads the first answer's head hands its headers here.
package enum MirrorLinks {
    /// The duplicates the `Link` headers list (each header may hold several links, comma-separated), ordered
    /// by `pri` (lower first; one without after those with), then as listed. Only http(s) URLs are kept.
    package static func sources(link headers: [String]) -> [DownloadSource] {
        var found: [DownloadSource] = []
        for header in headers {
            for value in splitOutsideQuotes(header, by: ",") {
                if let source = duplicate(value) { found.append(source) }
            }
        }
        return MetalinkJobs.ordered(found, locations: [])
    }

    /// The strongest digest the `Digest` headers give (SHA-512, SHA-256, SHA (SHA-1), MD5), base64 decoded to
    /// hex; nil when none of those is there or well-formed.
    package static func checksum(digest headers: [String]) -> Checksum? {
        var found: [Checksum] = []
        for header in headers {
            for item in header.split(separator: ",") {
                let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingWhitespace() }
                guard parts.count == 2, let algorithm = algorithm(parts[0]),
                      let bytes = Data(base64Encoded: parts[1]), bytes.count * 2 == algorithm.hexLength
                else { continue }
                found.append(Checksum(algorithm: algorithm, hex: hex(bytes)))
            }
        }
        return Metalink.File(name: "", hashes: found).strongestHash
    }

    /// Both at once, from a response's header lines ("Name: value").
    package static func read(headers: [String]) -> (sources: [DownloadSource], checksum: Checksum?) {
        func values(_ name: String) -> [String] {
            headers.compactMap { line in
                guard let colon = line.firstIndex(of: ":"),
                      line[..<colon].trimmingWhitespace().lowercased() == name
                else { return nil }
                return line[line.index(after: colon)...].trimmingWhitespace()
            }
        }
        return (sources(link: values("link")), checksum(digest: values("digest")))
    }

    /// RFC 3230's digest names (case-insensitive) for those haul computes: "SHA" is SHA-1.
    static func algorithm(_ name: String) -> DigestAlgorithm? {
        switch name.lowercased() {
        case "sha-512": .sha512
        case "sha-256": .sha256
        case "sha": .sha1
        case "md5": .md5
        default: nil
        }
    }

    /// One link-value: `<URL>` and its parameters; a source when `rel` has `duplicate` and the URL is http(s).
    static func duplicate(_ value: String) -> DownloadSource? {
        let trimmed = value.trimmingWhitespace()
        guard trimmed.hasPrefix("<"), let close = trimmed.firstIndex(of: ">") else { return nil }
        let url = String(trimmed[trimmed.index(after: trimmed.startIndex)..<close])
        var parameters: [String: String] = [:]
        for parameter in splitOutsideQuotes(String(trimmed[trimmed.index(after: close)...]), by: ";") {
            let parts = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingWhitespace() }
            guard let name = parts.first?.lowercased(), !name.isEmpty else { continue }
            var value = parts.count == 2 ? parts[1] : ""
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            // The first of a parameter given twice counts (RFC 8288, 3.3).
            if parameters[name] == nil { parameters[name] = value }
        }
        guard let rel = parameters["rel"], rel.lowercased().split(separator: " ").contains("duplicate"),
              URLCheck.problem(with: url) == nil
        else { return nil }
        var source = DownloadSource(url: url)
        source.priority = parameters["pri"].flatMap { Int($0) }.flatMap { (1...999_999).contains($0) ? $0 : nil }
        if let geo = parameters["geo"]?.lowercased(), geo.utf8.count == 2, geo.utf8.allSatisfy({ (0x61...0x7A).contains($0) }) {
            source.location = geo
        }
        return source
    }

    /// `text` cut at each `separator` that is neither inside `"..."` nor inside `<...>`.
    static func splitOutsideQuotes(_ text: String, by separator: Character) -> [String] {
        var parts: [String] = []
        var current = ""
        var quoted = false
        var bracketed = false
        for character in text {
            switch character {
            case "\"" where !bracketed: quoted.toggle()
            case "<" where !quoted: bracketed = true
            case ">" where !quoted: bracketed = false
            case separator where !quoted && !bracketed:
                parts.append(current)
                current = ""
                continue
            default: break
            }
            current.append(character)
        }
        parts.append(current)
        return parts.filter { !$0.trimmingWhitespace().isEmpty }
    }

    private static func hex(_ bytes: Data) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
