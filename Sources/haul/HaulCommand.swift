import ArgumentParser
import Foundation
import HaulCore

/// The command line of the SPEC, parsed. `Entry` runs it.
struct HaulCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "haul",
        abstract: "Download files over HTTP(S), fast, resumable, with progress.",
        discussion: """
            URLs are separate downloads, --jobs of them at once. Without a terminal on stdout (or with \
            --plain) progress is printed as lines; --json prints one JSON object per event.
            Settings come from $XDG_CONFIG_HOME/haul/config.toml (~/.config/haul/config.toml) when it exists: \
            its keys are the long option names (jobs = 8, output-dir = "~/Downloads"); the command line wins.
            Exit codes: 0 all done, 1 other, 2 usage, 3 local file I/O, 4 network, 5 TLS, 6 authentication, \
            7 protocol, 8 server error answer, 9 checksum mismatch, 10 cancelled, 129 stopped by SIGHUP, \
            130 interrupted (SIGINT), 143 stopped by SIGTERM.
            """,
        version: HaulVersion.string)

    @Argument(help: "URLs to download.")
    var urls: [String] = []

    @Option(name: [.customShort("o"), .customLong("output-dir")],
            help: "Directory for the files (created if missing). Default: the current directory; haul-demo with --demo.")
    var outputDirectory: String?

    @Option(name: [.customShort("O"), .customLong("output")],
            help: "File name to save as (only with a single URL). With -o a plain name; without, a path (dir/name).")
    var output: String?

    @Option(name: [.customShort("i"), .customLong("input-file")], help: "Read URLs from FILE, one per line, '#' comments; '-' reads stdin.")
    var inputFile: String?

    @Option(name: [.customShort("j"), .customLong("jobs")], help: "Downloads at once, \(Limits.jobs).")
    var jobs = 4

    /// `haul` alone or `haul attach`: the TUI on the service's queue, nothing added.
    @Flag(help: .hidden)
    var attach = false

    @Flag(help: "Start the bundled sample server on 127.0.0.1 (an ephemeral port) and download from it.")
    var demo = false

    @Option(name: [.customShort("s"), .customLong("segments")], help: "Connections per file (Range requests), \(Limits.segments).")
    var segments = 1

    @Option(help: "Browse a SuperStorage-API server (its /files/list) in the full-screen interface.")
    var server: String?

    @Flag(help: "Line output instead of the full-screen interface.")
    var plain = false

    @Flag(help: "One JSON object per event per line on stdout.")
    var json = false

    @Flag(name: .shortAndLong, help: "Print only errors.")
    var quiet = false

    @Option(help: "Retries per download on transient errors, each resuming where it stopped; \(Limits.retries).")
    var retries = 5

    @Flag(name: .customLong("no-resume"), help: "Ignore partial state and start over.")
    var noResume = false

    @Flag(name: .customLong("no-partial-preview"), help: "Do not keep a partial JPEG preview on cancel.")
    var noPartialPreview = false

    @Option(help: "Fail a transfer that receives no bytes for this many seconds: 0 (never) or 0.1...2592000 (30 days).")
    var timeout: Double = 30

    @Option(name: .customLong("connect-timeout"), help: "Seconds allowed to connect, 0.1...2592000 (30 days).")
    var connectTimeout: Double = 15

    @Option(name: .customLong("limit-rate"), help: "Overall download rate cap, e.g. 500K, 2M; 1 byte/s to 1024G.")
    var limitRate: String?

    @Option(help: "Verify the file after download: sha256=HEX, sha1=HEX or md5=HEX (single URL only).")
    var checksum: String?

    @Flag(help: "Replace an existing file of the same name.")
    var overwrite = false

    @Flag(name: .customLong("skip-existing"), help: "Leave an existing file alone and count it as done.")
    var skipExisting = false

    @Option(name: [.customShort("H"), .customLong("header")], help: "Extra request header \"Name: value\" (repeatable).")
    var headers: [String] = []

    @Option(name: .customLong("user-agent"), help: "User-Agent to send.")
    var userAgent: String?

    @Flag(help: "Do not verify TLS certificates.")
    var insecure = false

    @Option(name: .customLong("max-redirs"), help: "Most redirects to follow, \(Limits.redirects).")
    var maxRedirects = 10

    // Taken out of the arguments before they are parsed (`ConfigFile.select`): here for the help only.
    @Option(name: .customLong("config"), help: ArgumentHelp(
        "Read settings from FILE instead of $XDG_CONFIG_HOME/haul/config.toml (~/.config/haul/config.toml).",
        valueName: "file"))
    var configFile: String?

    @Flag(name: .customLong("no-config"), help: "Read no config file.")
    var noConfig = false

    /// Every number from the command line is checked here, before anything converts it: a value out of
    /// range is a one-line usage error that names the option and the range, never a trap further down.
    func validate() throws {
        if output != nil && urls.count + (inputFile == nil ? 0 : 2) > 1 {
            throw ValidationError("--output takes a single URL")
        }
        try Limits.check("--jobs", jobs, Limits.jobs)
        try Limits.check("--segments", segments, Limits.segments)
        try Limits.check("--retries", retries, Limits.retries)
        try Limits.check("--max-redirs", maxRedirects, Limits.redirects)
        if !(timeout == 0 || Limits.seconds.contains(timeout)) {
            throw ValidationError("--timeout must be 0 (never) or from 0.1 to 2592000 seconds (30 days), not \(timeout)")
        }
        if !Limits.seconds.contains(connectTimeout) {
            throw ValidationError("--connect-timeout must be from 0.1 to 2592000 seconds (30 days), not \(connectTimeout)")
        }
        if let limitRate, RateLimit.parse(limitRate) == nil {
            throw ValidationError("--limit-rate: '\(limitRate)' is not a rate such as 500K or 2M, from 1 (byte/s) to 1024G")
        }
        if overwrite && skipExisting { throw ValidationError("--overwrite and --skip-existing exclude each other") }
        if let output { _ = try Self.placement(output: output, outputDirectory: outputDirectory) }
        if let checksum {
            if case .failure(let error) = Checksum.parse(checksum) { throw ValidationError(error.message) }
            if urls.count + (inputFile == nil ? 0 : 2) > 1 { throw ValidationError("--checksum takes a single URL") }
        }
        for header in headers where !header.contains(":") {
            throw ValidationError("--header '\(header)' is not \"Name: value\"")
        }
        if urls.isEmpty && inputFile == nil && !demo && server == nil && !attach { throw ValidationError("no URL given") }
    }

    /// Where `-O` puts the file: `-O` names a file. With `-o DIR` it must be a plain name (no `/`, not `.`
    /// or `..`, not empty, no control characters), so nothing lands outside DIR; without `-o`, `-O a/b/x.bin`
    /// means directory `a/b` and name `x.bin`. The name handed to the download never contains a `/`.
    static func placement(output: String, outputDirectory: String?) throws -> (directory: String?, name: String) {
        var directory = outputDirectory
        var name = output
        if outputDirectory == nil, let slash = output.lastIndex(of: "/") {
            let parent = String(output[..<slash])
            directory = parent.isEmpty ? "/" : parent
            name = String(output[output.index(after: slash)...])
        }
        let problem: String? =
            if name.isEmpty && !output.isEmpty { "ends in '/', not in a file name" }
            else if name.contains("/") { "must be a plain file name with --output-dir, not a path" }
            else { FileNaming.problem(withPlainName: name) }
        if let problem { throw ValidationError("--output '\(output)' \(problem)") }
        return (directory, name)
    }

    /// `--limit-rate`, shared by all transfers together.
    var overallRate: Int64? { limitRate.flatMap(RateLimit.parse) }

    /// The downloads this command line asks for, in order. With `absolute`, the output directory is made
    /// absolute against the current one (for the service, whose current directory is not the client's).
    func downloads(extraURLs: [String], absolute: Bool = false) -> [DownloadJob] {
        var options = TransferOptions()
        options.stallTimeout = timeout
        options.connectTimeout = connectTimeout
        options.maxRedirects = maxRedirects
        options.insecure = insecure
        if let userAgent { options.userAgent = userAgent }
        let policy: ExistingFilePolicy = overwrite ? .overwrite : (skipExisting ? .skip : .rename)
        // `validate` has refused an `-O` that `placement` throws for.
        let placed = output.flatMap { try? Self.placement(output: $0, outputDirectory: outputDirectory) }
        var directory = placed?.directory ?? outputDirectory ?? (demo ? "haul-demo" : ".")
        if absolute && !directory.hasPrefix("/") {
            let here = FileManager.default.currentDirectoryPath
            directory = directory == "." ? here : FilePath.join(here, directory)
        }
        return (urls + extraURLs).map { url in
            var job = DownloadJob(url: url, outputDirectory: directory, outputName: placed?.name)
            job.existingFile = policy
            job.headers = headers
            job.transfer = options
            job.retries = retries
            job.resume = !noResume
            job.partialPreview = !noPartialPreview
            job.segments = segments
            job.checksum = checksum.flatMap { try? Checksum.parse($0).get() }
            return job
        }
    }
}

/// The ranges of the command line's numbers, shown in the help and checked by `HaulCommand.validate`.
enum Limits {
    static let jobs = 1...64
    static let segments = 1...16
    static let retries = 0...1000
    static let redirects = 0...1000
    /// `--timeout` (besides 0) and `--connect-timeout`: 0.1 s to 30 days.
    static let seconds = 0.1...TransferOptions.maxSeconds

    static func check(_ option: String, _ value: Int, _ range: ClosedRange<Int>) throws {
        guard range.contains(value) else {
            throw ValidationError("\(option) must be from \(range.lowerBound) to \(range.upperBound), not \(value)")
        }
    }
}
