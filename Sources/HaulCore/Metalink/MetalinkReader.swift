import CXML2
import FoundationEssentials

/// Reads a metalink as libxml2's SAX2 push parser reports it (Sources/CXML2: no DTD loaded, no entity
/// declared or expanded, no network), element by element, keeping only what a download needs and stopping at
/// the first bound it breaks. One document, fed in order from one thread.
final class MetalinkReader {
    static let namespace4 = "urn:ietf:params:xml:ns:metalink"
    static let namespace3 = "http://www.metalinker.org/"

    private enum Version { case four, three }

    private let limits: Metalink.Limits
    private var parser: OpaquePointer?
    private var version: Version?
    /// The open elements' names; "" for one in another namespace (an extension, skipped with what it holds).
    private var path: [String] = []
    private var files: [Metalink.File] = []
    private var notes: [String] = []
    private var urlCount = 0
    /// The text of the element being read, when it is one whose text is kept.
    private var text: [UInt8]?
    /// The attributes of the element whose text is being read.
    private var attributes: [String: String] = [:]
    /// The `<pieces>` being read: its algorithm (nil when haul does not compute it) and length.
    private var pieces: (algorithm: DigestAlgorithm?, length: Int64, hashes: [String])?
    private var fed = 0
    private var problem: MetalinkProblem?

    init(limits: Metalink.Limits) throws(MetalinkProblem) {
        self.limits = limits
        var message = [CChar](repeating: 0, count: 600)
        guard haul_xml_load(&message, message.count) == 0 else {
            throw MetalinkProblem(message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }, category: .other)
        }
        var handlers = haul_xml_handlers(
            start: { context, name, uri, count, attributes in
                MetalinkReader.from(context).start(name, uri, Int(count), attributes)
            },
            end: { context in MetalinkReader.from(context).end() },
            text: { context, bytes, length in MetalinkReader.from(context).characters(bytes, Int(length)) })
        // Unretained: the parser lives no longer than this reader, which frees it in `deinit`.
        guard let parser = haul_xml_parser_new(&handlers, Unmanaged.passUnretained(self).toOpaque()) else {
            throw MetalinkProblem("cannot start the XML parser", category: .other)
        }
        self.parser = parser
    }

    deinit { haul_xml_parser_free(parser) }

    private static func from(_ context: UnsafeMutableRawPointer?) -> MetalinkReader {
        Unmanaged<MetalinkReader>.fromOpaque(context!).takeUnretainedValue()
    }

    /// Feeds the document's next bytes; the problem once it is refused (nothing more is read after one).
    func feed(_ bytes: [UInt8], last: Bool) -> MetalinkProblem? {
        if let problem { return problem }
        fed += bytes.count
        if fed > limits.bytes {
            return refuse("is larger than \(Self.size(limits.bytes)) (the most a metalink may be)")
        }
        let status = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                haul_xml_parser_feed(parser, $0.baseAddress, Int32($0.count), last ? 1 : 0)
            }
        }
        if let problem { return problem }
        if status != 0 {
            var line: Int32 = 0
            let reason = Self.trimmed(String(cString: haul_xml_parser_error(parser, &line)))
            problem = MetalinkProblem("line \(line): \(reason.isEmpty ? "not well-formed XML" : reason)")
        }
        return problem
    }

    /// The document read, once it has all been fed.
    func result() -> Result<Metalink, MetalinkProblem> {
        if let problem { return .failure(problem) }
        guard version != nil else { return .failure(MetalinkProblem("is not a metalink (no <metalink> element)")) }
        guard !files.isEmpty else { return .failure(MetalinkProblem("describes no file")) }
        return .success(Metalink(files: files, notes: notes))
    }

    @discardableResult
    private func refuse(_ message: String) -> MetalinkProblem {
        let refused = problem ?? MetalinkProblem(message)
        problem = refused
        haul_xml_parser_stop(parser)
        return refused
    }

    private static func size(_ bytes: Int) -> String { "\(bytes >> 20) MiB" }

    // MARK: elements

    private func start(_ name: UnsafePointer<CChar>?, _ uri: UnsafePointer<CChar>?, _ count: Int,
                       _ raw: UnsafeMutablePointer<UnsafePointer<CChar>?>?) {
        guard problem == nil, let name else { return }
        let local = String(cString: name)
        let namespace = uri.map { String(cString: $0) } ?? ""
        if path.isEmpty {
            guard local == "metalink", namespace == Self.namespace4 || namespace == Self.namespace3 else {
                refuse("is not a metalink (its root is <\(local)> in namespace '\(namespace)')")
                return
            }
            version = namespace == Self.namespace4 ? .four : .three
        }
        let ours = namespace == (version == .four ? Self.namespace4 : Self.namespace3) && !path.contains("")
        path.append(ours ? local : "")
        guard ours else { return }
        let attributes = Self.attributes(count, raw)
        switch (version!, path) {
        case (.four, ["metalink", "file"]), (.three, ["metalink", "files", "file"]):
            startFile(attributes)
        case (.four, ["metalink", "file", "pieces"]), (.three, ["metalink", "files", "file", "verification", "pieces"]):
            startPieces(attributes)
        case (.four, ["metalink", "file", "url"]), (.three, ["metalink", "files", "file", "resources", "url"]):
            urlCount += 1
            if urlCount > limits.urls {
                refuse("has more than \(limits.urls) URLs")
            } else if files[files.count - 1].urls.count >= limits.urlsPerFile {
                refuse("file '\(files[files.count - 1].name)' has more than \(limits.urlsPerFile) URLs")
            } else {
                keepText(attributes)
            }
        case (.four, ["metalink", "file", "size"]), (.four, ["metalink", "file", "hash"]),
            (.four, ["metalink", "file", "pieces", "hash"]), (.four, ["metalink", "file", "metaurl"]),
            (.three, ["metalink", "files", "file", "size"]), (.three, ["metalink", "files", "file", "verification", "hash"]),
            (.three, ["metalink", "files", "file", "verification", "pieces", "hash"]):
            keepText(attributes)
        default:
            break
        }
    }

    private func keepText(_ attributes: [String: String]) {
        text = []
        self.attributes = attributes
    }

    private func startFile(_ attributes: [String: String]) {
        guard files.count < limits.files else {
            refuse("describes more than \(limits.files) files")
            return
        }
        guard let name = attributes["name"] else {
            refuse("has a <file> without a name")
            return
        }
        files.append(Metalink.File(name: name))
    }

    private func startPieces(_ attributes: [String: String]) {
        guard let length = attributes["length"].flatMap({ Int64($0) }), length > 0 else {
            refuse("file '\(files[files.count - 1].name)': <pieces> without a length of 1 byte or more")
            return
        }
        pieces = (Self.algorithm(attributes["type"] ?? ""), length, [])
    }

    private func characters(_ bytes: UnsafePointer<CChar>?, _ length: Int) {
        guard problem == nil, text != nil, let bytes else { return }
        guard text!.count + length <= limits.textBytes else {
            refuse("<\(path.last ?? "")> holds more than \(limits.textBytes) bytes of text")
            return
        }
        bytes.withMemoryRebound(to: UInt8.self, capacity: length) {
            text!.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
        }
    }

    private func end() {
        guard problem == nil else { return }
        defer { path.removeLast() }
        if let kept = text {
            text = nil
            let value = Self.trimmed(String(decoding: kept, as: UTF8.self))
            endText(path.last ?? "", value)
        } else if path.last == "pieces", let pieces {
            self.pieces = nil
            if let algorithm = pieces.algorithm, !pieces.hashes.isEmpty {
                files[files.count - 1].pieces = PieceHashes(algorithm: algorithm, length: pieces.length, hashes: pieces.hashes)
            }
        }
    }

    private func endText(_ element: String, _ value: String) {
        let file = files[files.count - 1].name
        switch element {
        case "size":
            guard let size = Int64(value), size >= 0 else {
                refuse("file '\(file)': size '\(value.prefix(40))' is not a number of bytes")
                return
            }
            files[files.count - 1].size = size
        case "hash" where pieces != nil:
            guard pieces!.hashes.count < limits.piecesPerFile else {
                refuse("file '\(file)' has more than \(limits.piecesPerFile) pieces")
                return
            }
            if let algorithm = pieces!.algorithm {
                guard let hex = Self.hex(value, algorithm) else {
                    refuse("file '\(file)': a piece's \(algorithm.rawValue) hash is not \(algorithm.hexLength) hex digits")
                    return
                }
                pieces!.hashes.append(hex)
            }
        case "hash":
            guard let algorithm = Self.algorithm(attributes["type"] ?? "") else { return }
            guard let hex = Self.hex(value, algorithm) else {
                refuse("file '\(file)': its \(algorithm.rawValue) hash is not \(algorithm.hexLength) hex digits")
                return
            }
            files[files.count - 1].hashes.append(Checksum(algorithm: algorithm, hex: hex))
        case "url":
            endURL(file, value)
        case "metaurl":
            // A metaurl is another metalink or a torrent; only a torrent is worth telling (haul reads neither).
            if attributes["mediatype"] == "torrent" {
                notes.append("file '\(file)': a torrent (metaurl) is not supported; its other sources are used")
            }
        default:
            break
        }
    }

    private func endURL(_ file: String, _ value: String) {
        if version == .three, let type = attributes["type"], type == "bittorrent" {
            notes.append("file '\(file)': a bittorrent resource is not supported; its other sources are used")
            return
        }
        if let why = URLCheck.problem(with: value) {
            notes.append("file '\(file)': source \(URLRedaction.masked(String(value.prefix(200)))) dropped: \(why)")
            return
        }
        var source = DownloadSource(url: value)
        if version == .four {
            source.priority = attributes["priority"].flatMap { Int($0) }.flatMap { (1...999_999).contains($0) ? $0 : nil }
        } else if let preference = attributes["preference"].flatMap({ Int($0) }), (0...100).contains(preference) {
            // 3.0's preference is 100 for the most preferred; RFC 5854's priority is 1 for it (RFC 5854, appendix A).
            source.priority = 101 - max(preference, 1)
        }
        if let location = attributes["location"]?.lowercased(), location.utf8.count == 2,
           location.utf8.allSatisfy({ (0x61...0x7A).contains($0) })
        {
            source.location = location
        }
        files[files.count - 1].urls.append(source)
    }

    // MARK: values

    /// Without white space (line breaks too) at either end: an element's text as generators indent it.
    static func trimmed(_ text: String) -> String {
        guard let first = text.firstIndex(where: { !$0.isWhitespace }) else { return "" }
        let last = text.lastIndex(where: { !$0.isWhitespace })!
        return String(text[first...last])
    }

    /// The IANA hash names (RFC 5854: "sha-256") and 3.0's ("sha256"), for those haul computes.
    static func algorithm(_ name: String) -> DigestAlgorithm? {
        DigestAlgorithm(rawValue: name.lowercased().replacing("-", with: ""))
    }

    static func hex(_ value: String, _ algorithm: DigestAlgorithm) -> String? {
        guard case .success(let checksum) = Checksum.parsed("\(algorithm.rawValue)=\(value)") else { return nil }
        return checksum.hex
    }

    /// The attributes without a namespace (those of the metalink's own elements), from SAX2's groups of five
    /// pointers (local name, prefix, URI, value's start, value's end).
    private static func attributes(_ count: Int, _ raw: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> [String: String] {
        guard let raw, count > 0 else { return [:] }
        var result: [String: String] = [:]
        for index in 0..<count {
            let base = raw + 5 * index
            guard base[2] == nil, let name = base[0], let start = base[3], let end = base[4] else { continue }
            let bytes = UnsafeRawBufferPointer(start: start, count: end - start)
            result[String(cString: name)] = String(decoding: bytes, as: UTF8.self)
        }
        return result
    }
}
