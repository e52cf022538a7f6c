import Foundation
import HaulCore
import HaulTorrent

/// The options of `addUri` and `changeOption`, as aria2 front ends send them: an object of strings
/// (`{"dir": "/home/me/Downloads", "split": "4", "header": ["A: b"]}`), numbers and booleans accepted too.
/// The values are read and checked by `JobOptions`, as an input file's are; this face keeps what is its own:
/// JSON, where `dir` may lie, the sanitising of `out`, `pause` and `gid`.
///
/// Unknown keys and nulls are ignored, as aria2 ignores them (front ends send a whole `getOption` result
/// back into `addUri` when they retry). Path-bearing and process-wide keys (`log`, `save-session`,
/// `on-download-complete`, `rpc-*`...) are ignored too: nothing sent over the socket names a file to write
/// but `dir` and `out`, and those are checked (`Aria2Paths`).
struct Aria2Options: Sendable, Equatable {
    /// What the download gets: `directory` canonical, under an allowed root; `outputName` sanitised.
    var job = JobOptions()
    /// The allowed root `dir` lies in: the download reaches `dir` from it without following a link.
    var dirRoot: String?
    var pause: Bool?
    var gid: String?
    /// A torrent's options (`select-file`, `seed-ratio`, `seed-time`, `bt-tracker`), for `addTorrent` and a
    /// magnet's `addUri`.
    var torrent = TorrentSpec()

    /// A plain name, sanitised.
    var out: String? { job.outputName }

    /// `max-download-limit`: `.some(nil)` lifts the limit.
    var downloadLimit: Int64?? {
        get { job.rateLimit }
        set { job.rateLimit = newValue }
    }

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
        if let name = JobOptions.Name(rawValue: key), name.isTaken(by: .aria2) {
            try take(name, value, paths: paths)
            return
        }
        switch key {
        case "pause":
            pause = try Self.flag(key, value)
        case "select-file":
            let text = try Self.text(key, value)
            if case .failure(let error) = FileSelection.parse(text) { throw .aria2("select-file: \(error.message)") }
            torrent.selection = text
        case "seed-ratio", "seed-time":
            let text = try Self.text(key, value)
            guard let number = Double(text), number >= 0, number <= 1_000_000_000 else {
                throw .aria2("\(key) must be a number of 0 or more, not \(Self.quoted(text))")
            }
            if key == "seed-ratio" { torrent.seedRatio = number } else { torrent.seedMinutes = number }
        case "bt-tracker":
            torrent.trackers = try Self.text(key, value).split(separator: ",").map(String.init).filter { !$0.isEmpty }
        case "gid":
            let text = try Self.text(key, value)
            guard GID.isValid(text) else { throw .aria2("gid must be 16 hex digits, not \(Self.quoted(text))") }
            gid = text.lowercased()
        default:
            // Unknown, unsupported or path-bearing keys are ignored, as aria2 ignores unknown ones.
            break
        }
    }

    /// One of the options `JobOptions` reads, from its JSON value.
    private mutating func take(_ name: JobOptions.Name, _ value: JSON, paths: Aria2Paths) throws(JSONRPC.Failure) {
        var texts: [String] = []
        switch (name, value) {
        case (.header, .array(let items)):
            // A list sets the headers anew, even an empty one (`changeOption`).
            job.headers = []
            for item in items { texts.append(try Self.text(name.rawValue, item)) }
        default: texts.append(try Self.text(name.rawValue, value))
        }
        do {
            for text in texts { try job.set(name, text) }
        } catch {
            throw .aria2(error.message)
        }
        switch name {
        case .dir:
            switch paths.allowedDirectory(job.directory ?? "") {
            case .success(let canonical):
                job.directory = canonical
                dirRoot = paths.root(of: canonical)
            case .failure(let failure): throw failure
            }
        case .out:
            // A name from the network: no leading dot, nothing invisible.
            job.outputName = job.outputName.map(FileNaming.sanitize)
        default: break
        }
    }

    /// The job these options make of `job`. `defaultSegments` stands for the global split and connections.
    func apply(to job: inout DownloadJob, split defaultSplit: Int, connectionsPerServer defaultConnections: Int) {
        // Headers given replace the download's own (but its referer), as a `changeOption` sets them anew.
        if self.job.headers != nil { job.headers.removeAll { !$0.lowercased().hasPrefix("referer:") } }
        self.job.apply(to: &job)
        if self.job.directory != nil { job.confinedTo = dirRoot }
        let split = self.job.split, connectionsPerServer = self.job.connectionsPerServer
        if split != nil || connectionsPerServer != nil || job.segments == 1 {
            // aria2 spreads `split` over the download's URIs, at most `max-connection-per-server` to a host.
            let hosts = Set(job.sources.map { SourceSpread.server(of: $0.url) }).count
            let perServer = connectionsPerServer ?? defaultConnections
            job.connectionsPerServer = Swift.max(1, perServer)
            job.segments = Swift.min(16, Swift.max(1, Swift.min(split ?? defaultSplit, perServer * hosts)))
        }
    }

    // MARK: values

    /// The text of a JSON value, as aria2 reads every option: numbers and booleans as they are written.
    static func text(_ key: String, _ value: JSON) throws(JSONRPC.Failure) -> String {
        switch value {
        case .string(let text): return text
        case .int(let number): return String(number)
        case .bigInteger(let digits): return digits
        case .double(let number): return "\(number)"
        case .bool(let flag): return flag ? "true" : "false"
        default: throw .aria2("\(key) must be a string")
        }
    }

    private static func flag(_ key: String, _ value: JSON) throws(JSONRPC.Failure) -> Bool {
        switch try text(key, value).lowercased() {
        case "true": return true
        case "false": return false
        case let other: throw .aria2("\(key) must be true or false, not \(quoted(other))")
        }
    }

    static func quoted(_ text: String) -> String {
        "'" + JobOptions.shown(text) + "'"
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
