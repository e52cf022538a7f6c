import Foundation
import HaulCore

/// The options of `addUri` and `changeOption`, as aria2 front ends send them: an object of strings
/// (`{"dir": "/home/me/Downloads", "split": "4", "header": ["A: b"]}`), numbers and booleans accepted too.
///
/// Unknown keys and nulls are ignored, as aria2 ignores them (front ends send a whole `getOption` result
/// back into `addUri` when they retry). Path-bearing and process-wide keys (`log`, `save-session`,
/// `on-download-complete`, `rpc-*`...) are ignored too: nothing sent over the socket names a file to write
/// but `dir` and `out`, and those are checked (`Aria2Paths`).
struct Aria2Options: Sendable, Equatable {
    /// Canonical, under an allowed root.
    var dir: String?
    /// The allowed root `dir` lies in: the download reaches `dir` from it without following a link.
    var dirRoot: String?
    /// A plain name, sanitised.
    var out: String?
    var split: Int?
    var connectionsPerServer: Int?
    var headers: [String]?
    var userAgent: String?
    var referer: String?
    var proxy: String?
    var checksum: Checksum?
    /// `max-download-limit`: `.some(nil)` lifts the limit.
    var downloadLimit: Int64??
    var pause: Bool?
    var gid: String?

    /// Reads the options a client sent; the first bad value is an error naming it.
    static func parse(_ value: JSON?, paths: Aria2Paths) -> Result<Aria2Options, JSONRPC.Failure> {
        var options = Aria2Options()
        guard let value, value != .null else { return .success(options) }
        guard let members = value.members else { return .failure(.aria2("options must be a struct")) }
        for (key, value) in members {
            if value == .null { continue }
            do {
                try options.read(key, value, paths: paths)
            } catch {
                return .failure(error)
            }
        }
        return .success(options)
    }

    private mutating func read(_ key: String, _ value: JSON, paths: Aria2Paths) throws(JSONRPC.Failure) {
        switch key {
        case "dir":
            switch paths.allowedDirectory(try Self.text(key, value)) {
            case .success(let canonical):
                dir = canonical
                dirRoot = paths.root(of: canonical)
            case .failure(let failure): throw failure
            }
        case "out":
            let name = try Self.text(key, value)
            // On bytes: a `/` that a combining mark joins into one Character is a `/` to the file system.
            if name.utf8.contains(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "\\") || $0 == 0 })
                || name.utf8.allSatisfy({ $0 == UInt8(ascii: ".") })
            {
                throw .aria2("out must be a file name, without / or \\ or .., not \(Self.quoted(name))")
            }
            out = FileNaming.sanitize(name)
        case "split": split = try Self.count(key, value)
        case "max-connection-per-server": connectionsPerServer = try Self.count(key, value)
        case "header":
            var lines: [String] = []
            switch value {
            case .array(let items): for item in items { lines.append(try Self.text(key, item)) }
            default: lines.append(try Self.text(key, value))
            }
            for line in lines {
                if line.contains("\r") || line.contains("\n") || line.contains("\0") {
                    throw .aria2("header must not contain CR, LF or NUL")
                }
                if !line.contains(":") { throw .aria2("header must be NAME: VALUE, not \(Self.quoted(line))") }
            }
            headers = lines
        case "user-agent": userAgent = try Self.line(key, value)
        case "referer": referer = try Self.line(key, value)
        case "all-proxy":
            let text = try Self.line(key, value)
            proxy = text
        case "checksum":
            let text = try Self.text(key, value)
            let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { throw .aria2("checksum must be TYPE=DIGEST, such as sha-256=HEX") }
            // aria2's spelling (sha-1, sha-256, md5) is one Checksum takes.
            switch Checksum.parse(text) {
            case .success(let checksum): self.checksum = checksum
            case .failure:
                throw .aria2("checksum: \(Self.quoted(parts[0])) with that digest is not supported (sha-256, sha-1, md5)")
            }
        case "max-download-limit":
            downloadLimit = .some(try Self.rate(key, value))
        case "pause":
            pause = try Self.flag(key, value)
        case "gid":
            let text = try Self.text(key, value)
            guard GID.isValid(text) else { throw .aria2("gid must be 16 hex digits, not \(Self.quoted(text))") }
            gid = text.lowercased()
        default:
            // Unknown, unsupported or path-bearing keys are ignored, as aria2 ignores unknown ones.
            break
        }
    }

    /// The job these options make of `job`. `defaultSegments` stands for the global split and connections.
    func apply(to job: inout DownloadJob, split defaultSplit: Int, connectionsPerServer defaultConnections: Int) {
        if let dir {
            job.outputDirectory = dir
            job.confinedTo = dirRoot
        }
        if let out { job.outputName = out }
        if split != nil || connectionsPerServer != nil || job.segments == 1 {
            job.segments = Swift.min(16, Swift.max(1, Swift.min(split ?? defaultSplit,
                                                                 connectionsPerServer ?? defaultConnections)))
        }
        if let headers {
            job.headers.removeAll { !$0.lowercased().hasPrefix("referer:") }
            job.headers += headers
        }
        if let referer {
            job.headers.removeAll { $0.lowercased().hasPrefix("referer:") }
            job.headers.append("Referer: \(referer)")
        }
        if let userAgent { job.transfer.userAgent = userAgent }
        if let proxy { job.transfer.proxy = proxy }
        if let checksum { job.checksum = checksum }
        if let downloadLimit { job.transfer.maxReceiveRate = downloadLimit }
    }

    // MARK: values

    private static func text(_ key: String, _ value: JSON) throws(JSONRPC.Failure) -> String {
        switch value {
        case .string(let text): return text
        case .int(let number): return String(number)
        case .bigInteger(let digits): return digits
        case .double(let number): return "\(number)"
        case .bool(let flag): return flag ? "true" : "false"
        default: throw .aria2("\(key) must be a string")
        }
    }

    private static func line(_ key: String, _ value: JSON) throws(JSONRPC.Failure) -> String {
        let text = try text(key, value)
        if text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw .aria2("\(key) must not contain control characters")
        }
        return text
    }

    private static func count(_ key: String, _ value: JSON) throws(JSONRPC.Failure) -> Int {
        let text = try text(key, value)
        guard let number = Int(text.trimmingCharacters(in: .whitespaces)), number >= 1, number <= 1 << 16 else {
            throw .aria2("\(key) must be a number from 1, not \(quoted(text))")
        }
        return number
    }

    private static func flag(_ key: String, _ value: JSON) throws(JSONRPC.Failure) -> Bool {
        switch try text(key, value).lowercased() {
        case "true": return true
        case "false": return false
        case let other: throw .aria2("\(key) must be true or false, not \(quoted(other))")
        }
    }

    /// A rate such as "0" (none), "1048576", "500K" or "2M"; nil for none.
    static func rate(_ key: String, _ value: JSON) throws(JSONRPC.Failure) -> Int64? {
        let text = try text(key, value).trimmingCharacters(in: .whitespaces)
        if text == "0" { return nil }
        guard let rate = RateLimit.parse(text) else {
            throw .aria2("\(key) must be a rate such as 0, 1048576, 500K or 2M, not \(quoted(text))")
        }
        return rate
    }

    static func quoted(_ text: String) -> String {
        "'" + String(text.unicodeScalars.prefix(80).map {
            $0.properties.generalCategory == .control ? "?" : Character($0)
        }) + "'"
    }
}

/// Where the aria2 face may put files: `dir` must lie under one of `roots` (`rpc-allowed-dirs`, by
/// default the service's output directory), after symbolic links are resolved, so that a page that learned
/// the secret still cannot write `~/.bashrc` or `/etc`.
struct Aria2Paths: Sendable, Equatable {
    /// Where a download without `dir` goes.
    var base: String
    /// Canonical (links resolved).
    var roots: [String]

    init(base: String, roots: [String]) {
        self.base = Self.canonical(base) ?? base
        let allowed = roots.isEmpty ? [base] : roots
        self.roots = allowed.map { Self.canonical($0) ?? $0 }
    }

    /// `requested` made absolute (against `base`), with links resolved as far as it exists; refused when it
    /// has a `..`, a NUL, or lies outside every root.
    /// The allowed root `canonical` lies in (the longest, when roots nest).
    func root(of canonical: String) -> String? {
        roots.filter { Self.lies(canonical, in: $0) }.max { $0.utf8.count < $1.utf8.count }
    }

    /// Whether the canonical path `path` is `root` or below it, by bytes.
    private static func lies(_ path: String, in root: String) -> Bool {
        FilePath.same(path, root) || FilePath.hasPrefix(path, FilePath.same(root, "/") ? "/" : root + "/")
    }

    func allowedDirectory(_ requested: String) -> Result<String, JSONRPC.Failure> {
        let shown = Aria2Options.quoted(requested)
        guard !requested.isEmpty, !requested.utf8.contains(0) else { return .failure(.aria2("dir \(shown) is not a directory path")) }
        // Split on bytes: a `/` that a combining mark joins into one Character still separates `..`.
        guard !FilePath.components(of: requested).contains(where: { FilePath.same($0, "..") }) else {
            return .failure(.aria2("dir \(shown) must not contain '..'"))
        }
        let absolute = FilePath.hasPrefix(requested, "/") ? requested : base + "/" + requested
        guard let canonical = Self.canonical(absolute) else {
            return .failure(.aria2("dir \(shown) cannot be resolved"))
        }
        guard roots.contains(where: { Self.lies(canonical, in: $0) }) else {
            return .failure(.aria2("dir \(shown) is outside the allowed download directories (rpc-allowed-dirs)"))
        }
        return .success(canonical)
    }

    /// The path with every link resolved: `realpath` of the longest part that exists, then the rest (which
    /// holds no `..`). nil when a part that exists cannot be resolved.
    static func canonical(_ path: String) -> String? {
        var existing = path
        var rest: [Substring] = []
        while true {
            if let resolved = realpath(existing, nil) {
                defer { free(resolved) }
                var result = String(cString: resolved)
                for component in rest.reversed() where !FilePath.same(component, ".") {
                    result += (FilePath.hasSuffix(result, "/") ? "" : "/") + component
                }
                return result
            }
            guard errno == ENOENT || errno == ENOTDIR else { return nil }
            // On bytes, as the kernel splits it.
            let trimmed = FilePath.hasSuffix(existing, "/") && existing.utf8.count > 1
                ? String(existing[..<existing.utf8.index(before: existing.endIndex)]) : existing
            guard let slash = trimmed.utf8.lastIndex(of: UInt8(ascii: "/")) else { return nil }
            let component = trimmed[trimmed.utf8.index(after: slash)...]
            if FilePath.same(component, "..") { return nil }
            if !component.isEmpty { rest.append(component) }
            existing = slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
        }
    }
}
