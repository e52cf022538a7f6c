/// The options of one download by aria2's names, read and checked in this one place for the two faces that
/// take them: an input file's indented `key=value` lines (`haul -i`) and aria2's JSON-RPC options (`addUri`,
/// `changeOption`, and `changeGlobalOption` for the values it shares). The same value is refused with the
/// same line through either: "segments=99: from 1 to 16".
///
/// Each face keeps only its own: the input file its line syntax and its refusal of a name it does not take;
/// aria2 its JSON values, its silence on names it does not know (front ends send whole `getOption` results
/// back), where `dir` may lie, the sanitising of a name that came over the network, and its global-only
/// options.
package struct JobOptions: Sendable, Equatable {
    /// Who reads options: each takes the names of `Name` that are its.
    package enum Face: Sendable {
        case inputFile, aria2
    }

    /// The one table of names: what each sets is `set`'s, and which face takes it is `isTaken(by:)`.
    package enum Name: String, CaseIterable, Sendable {
        case out, dir
        /// `segments` and `split` set one thing: a download's connections.
        case segments, split
        case connectionsPerServer = "max-connection-per-server"
        case header, checksum
        /// `limit-rate` and `max-download-limit` set one thing: a download's own rate cap.
        case limitRate = "limit-rate"
        case maxDownloadLimit = "max-download-limit"
        case userAgent = "user-agent"
        case referer
        case allProxy = "all-proxy"
        /// `sequential` and aria2's `stream-piece-selector` set one thing: whether the file is fetched front
        /// to back.
        case sequential
        case streamPieceSelector = "stream-piece-selector"

        /// Whether `face` takes this name: `segments` and `limit-rate` are haul's spellings, for input files
        /// only; a proxy is named on aria2's face only (an input file's downloads take the command line's).
        package func isTaken(by face: Face) -> Bool {
            switch self {
            case .segments, .limitRate, .sequential: face == .inputFile
            case .allProxy, .streamPieceSelector: face == .aria2
            default: true
            }
        }
    }

    /// Why a value is refused: one line that names the option and its value ("split=17: from 1 to 16"), which
    /// each face says its own way (after the input file's line number; as an aria2 error's message).
    package struct Problem: Error, Equatable {
        package let message: String

        init(_ message: String) {
            self.message = message
        }
    }

    /// Connections per download, whoever sets them (also the command line's `--segments`).
    package static let segmentRange = 1...16

    /// A plain name (`FileNaming.problem(withPlainName:)`, and no `\`).
    package var outputName: String?
    /// As given: each face makes it absolute its own way.
    package var directory: String?
    /// `segments` and `split`, the smallest given.
    package var split: Int?
    /// `max-connection-per-server`, the smallest given.
    package var connectionsPerServer: Int?
    /// The `header` lines, in order; nil when none was given.
    package var headers: [String]?
    package var referer: String?
    package var userAgent: String?
    package var proxy: String?
    package var checksum: Checksum?
    /// `limit-rate`, `max-download-limit`: `.some(nil)` ("0") lifts the limit.
    package var rateLimit: Int64??
    /// `sequential`, `stream-piece-selector`: front to back (true) or as the connections go (false).
    package var sequential: Bool?

    package init() {}

    /// Takes `value` for `name`, checked now: a bad one is refused before anything starts.
    package mutating func set(_ name: Name, _ value: String) throws(Problem) {
        let key = name.rawValue
        switch name {
        case .out:
            outputName = try Self.fileName(value)
        case .dir:
            guard !value.isEmpty else { throw Problem("dir= needs a directory") }
            if value.utf8.contains(0) { throw Problem("dir=\(Self.shown(value)): contains NUL") }
            directory = value
        case .segments, .split:
            let count = try Self.count(key, value, in: Self.segmentRange)
            split = min(split ?? count, count)
        case .connectionsPerServer:
            let count = try Self.count(key, value, in: Self.segmentRange)
            connectionsPerServer = min(connectionsPerServer ?? count, count)
        case .header:
            headers = (headers ?? []) + [try Self.header(value)]
        case .checksum:
            switch Checksum.parsed(value) {
            case .success(let parsed): checksum = parsed
            case .failure(let problem): throw Problem("checksum=\(Self.shown(value)): " + problem.words(option: "it"))
            }
        case .limitRate, .maxDownloadLimit:
            rateLimit = .some(try Self.rate(key, value))
        case .userAgent:
            userAgent = try Self.line(key, value)
        case .referer:
            referer = try Self.line(key, value)
        case .allProxy:
            proxy = try Self.line(key, value)
        case .sequential:
            switch value.trimmingWhitespace().lowercased() {
            case "true", "yes", "1": sequential = true
            case "false", "no", "0": sequential = false
            default: throw Problem("sequential=\(Self.shown(value)): true or false")
            }
        case .streamPieceSelector:
            // aria2's selectors: `inorder` is front to back; the others spread the connections over the file,
            // as haul's own plan does.
            switch value.trimmingWhitespace().lowercased() {
            case "inorder": sequential = true
            case "default", "geom", "random": sequential = false
            default: throw Problem("stream-piece-selector=\(Self.shown(value)): default, inorder, random or geom")
            }
        }
    }

    /// `job` with these options over its own: `header` lines are added to its headers, `referer` replaces its
    /// `Referer` header, and `max-connection-per-server` is the cap on the connections to any one of its sources'
    /// hosts: the connections are the fewer of `split` and that cap times the hosts (as aria2 spreads `split`
    /// over the URIs of one download: with its defaults, `split=5` and one connection a server, three mirrors
    /// on three hosts take three connections, one of them one).
    package func apply(to job: inout DownloadJob) {
        if let outputName { job.outputName = outputName }
        if let directory {
            // A directory given for this download (aria2's `dir`, `dir=` in an input file) is where it goes:
            // the config's categories do not move it.
            job.outputDirectory = directory
            if job.category == nil { job.category = CategoryRules.none }
        }
        if split != nil || connectionsPerServer != nil {
            let hosts = Set(job.sources.map { SourceSpread.server(of: $0.url) }).count
            let perServer = connectionsPerServer ?? Self.segmentRange.upperBound
            job.segments = min(split ?? Self.segmentRange.upperBound, perServer * hosts, Self.segmentRange.upperBound)
        }
        if let connectionsPerServer { job.connectionsPerServer = connectionsPerServer }
        if let headers { job.headers += headers }
        if let referer {
            job.headers.removeAll { $0.lowercased().hasPrefix("referer:") }
            job.headers.append("Referer: \(referer)")
        }
        if let userAgent { job.transfer.userAgent = userAgent }
        if let proxy { job.transfer.proxy = proxy }
        if let checksum { job.checksum = checksum }
        if let rateLimit { job.transfer.maxReceiveRate = rateLimit }
        if let sequential { job.sequential = sequential }
    }

    // MARK: sources

    /// The addresses of one download given together (an input file's line, aria2's `addUri`): the first is
    /// the download's URL, checked when it starts as any URL is; the others are its mirrors, each checked
    /// now (`URLCheck`: a scheme haul fetches, a host, no blank or control character), so that a mistyped mirror
    /// is said before anything starts rather than lost among the sources.
    package static func sources(_ urls: [String]) throws(Problem) -> [DownloadSource] {
        for mirror in urls.dropFirst() {
            if let problem = URLCheck.problem(with: mirror) {
                throw Problem("mirror '\(shown(URLRedaction.masked(mirror)))': \(problem)")
            }
        }
        return urls.map { DownloadSource(url: $0) }
    }

    /// The URLs of an input file's line: aria2 lists a download's mirrors after its URL, each after a tab.
    /// Blanks around each are taken off, and empty fields (two tabs) skipped.
    package static func urls(ofLine line: Substring) -> [String] {
        line.split(separator: "\t", omittingEmptySubsequences: true).compactMap { field in
            let url = field.trimmingWhitespace()
            return url.isEmpty ? nil : url
        }
    }

    // MARK: values

    /// One name: a plain one as `-O` takes it with `-o`, and, as a name that came over the network must be on
    /// any system, without `\` and not all dots.
    static func fileName(_ value: String) throws(Problem) -> String {
        // On bytes: a `\` that a combining mark joins into one Character is a `\` to the file system.
        let problem = FileNaming.problem(withPlainName: value)
            ?? (value.utf8.contains(UInt8(ascii: "\\")) ? "is a path, not a file name" : nil)
            ?? (value.utf8.allSatisfy({ $0 == UInt8(ascii: ".") }) ? "is not a file name" : nil)
        if let problem { throw Problem("out=\(shown(value)): \(problem)") }
        return value
    }

    /// A whole number in `range` ("16"; blanks around it are taken off).
    package static func count(_ key: String, _ value: String, in range: ClosedRange<Int>) throws(Problem) -> Int {
        guard let number = Int(value.trimmingWhitespace()), range.contains(number) else {
            throw Problem("\(key)=\(shown(value)): from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    /// A rate such as "1048576", "500K" or "2M" (`RateLimit`), or "0": none (nil).
    package static func rate(_ key: String, _ value: String) throws(Problem) -> Int64? {
        let text = value.trimmingWhitespace()
        if text == "0" { return nil }
        guard let rate = RateLimit.parse(text) else {
            throw Problem("\(key)=\(shown(value)) is not a rate such as 500K or 2M (0 for none)")
        }
        return rate
    }

    /// "Name: value", one line.
    static func header(_ value: String) throws(Problem) -> String {
        if value.utf8.contains(where: { $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") || $0 == 0 }) {
            throw Problem("header=\(shown(value)): contains CR, LF or NUL")
        }
        guard value.contains(":") else { throw Problem("header=\(shown(value)) is not \"Name: value\"") }
        return value
    }

    /// Text sent as it is in a request (`user-agent`, `referer`, `all-proxy`): no control characters.
    static func line(_ key: String, _ value: String) throws(Problem) -> String {
        if value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw Problem("\(key)=\(shown(value)): contains control characters")
        }
        return value
    }

    /// `text` as an error shows it: each control character a `?` (it is said on a terminal, or a front end's
    /// page), and its first 80 scalars.
    package static func shown(_ text: String) -> String {
        String(text.unicodeScalars.prefix(80).map { $0.properties.generalCategory == .control ? "?" : Character($0) })
    }
}
