import ArgumentParser
import HaulCore

/// The command line of the SPEC, parsed. `Entry` runs it.
struct HaulCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "haul",
        abstract: "Download files over HTTP(S), fast, resumable, with progress.",
        discussion: """
            URLs are separate downloads, --jobs of them at once. Without a terminal on stdout (or with \
            --plain) progress is printed as lines; --json prints one JSON object per event.
            Exit codes: 0 all done, 1 other, 2 usage, 3 local file I/O, 4 network, 5 TLS, 6 authentication, \
            7 protocol, 8 server error answer, 10 cancelled, 130 interrupted (SIGINT).
            """,
        version: HaulVersion.string)

    @Argument(help: "URLs to download.")
    var urls: [String] = []

    @Option(name: [.customShort("o"), .customLong("output-dir")],
            help: "Directory for the files (created if missing). Default: the current directory; haul-demo with --demo.")
    var outputDirectory: String?

    @Option(name: [.customShort("O"), .customLong("output")], help: "File name to save as (only with a single URL).")
    var output: String?

    @Option(name: [.customShort("i"), .customLong("input-file")], help: "Read URLs from FILE, one per line, '#' comments; '-' reads stdin.")
    var inputFile: String?

    @Option(name: [.customShort("j"), .customLong("jobs")], help: "Downloads at once.")
    var jobs = 4

    @Flag(help: "Start the bundled sample server on 127.0.0.1 (an ephemeral port) and download from it.")
    var demo = false

    @Option(name: [.customShort("s"), .customLong("segments")], help: "Connections per file (Range requests), 1...16.")
    var segments = 1

    @Option(help: "Browse a SuperStorage-API server (its /files/list) in the full-screen interface.")
    var server: String?

    @Flag(help: "Line output instead of the full-screen interface.")
    var plain = false

    @Flag(help: "One JSON object per event per line on stdout.")
    var json = false

    @Flag(name: .shortAndLong, help: "Print only errors.")
    var quiet = false

    @Option(help: "Retries per download on transient errors, each resuming where it stopped.")
    var retries = 5

    @Flag(name: .customLong("no-resume"), help: "Ignore partial state and start over.")
    var noResume = false

    @Flag(name: .customLong("no-partial-preview"), help: "Do not keep a partial JPEG preview on cancel.")
    var noPartialPreview = false

    @Option(help: "Fail a transfer that receives no bytes for this many seconds.")
    var timeout: Double = 30

    @Option(name: .customLong("connect-timeout"), help: "Seconds allowed to connect.")
    var connectTimeout: Double = 15

    @Option(name: .customLong("limit-rate"), help: "Overall download rate cap, e.g. 500K, 2M.")
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

    @Option(name: .customLong("max-redirs"), help: "Most redirects to follow.")
    var maxRedirects = 10

    func validate() throws {
        if output != nil && urls.count + (inputFile == nil ? 0 : 2) > 1 {
            throw ValidationError("--output takes a single URL")
        }
        if retries < 0 { throw ValidationError("--retries must be 0 or more") }
        if !(1...64).contains(jobs) { throw ValidationError("--jobs must be between 1 and 64") }
        if overwrite && skipExisting { throw ValidationError("--overwrite and --skip-existing exclude each other") }
        if timeout < 0 || !timeout.isFinite { throw ValidationError("--timeout must be 0 or more seconds") }
        if connectTimeout <= 0 || !connectTimeout.isFinite { throw ValidationError("--connect-timeout must be more than 0 seconds") }
        if maxRedirects < 0 { throw ValidationError("--max-redirs must be 0 or more") }
        if let checksum {
            if case .failure(let error) = Checksum.parse(checksum) { throw ValidationError(error.message) }
            if urls.count + (inputFile == nil ? 0 : 2) > 1 { throw ValidationError("--checksum takes a single URL") }
        }
        if let limitRate, RateLimit.parse(limitRate) == nil {
            throw ValidationError("--limit-rate: '\(limitRate)' is not a rate such as 500K or 2M")
        }
        for header in headers where !header.contains(":") {
            throw ValidationError("--header '\(header)' is not \"Name: value\"")
        }
        if !(1...16).contains(segments) { throw ValidationError("--segments must be between 1 and 16") }
        if urls.isEmpty && inputFile == nil && !demo && server == nil { throw ValidationError("no URL given") }
    }

    /// `--limit-rate`, shared by all transfers together.
    var overallRate: Int64? { limitRate.flatMap(RateLimit.parse) }

    /// The downloads this command line asks for, in order.
    func downloads(extraURLs: [String]) -> [DownloadJob] {
        var options = TransferOptions()
        options.stallTimeout = timeout
        options.connectTimeout = connectTimeout
        options.maxRedirects = maxRedirects
        options.insecure = insecure
        if let userAgent { options.userAgent = userAgent }
        let policy: ExistingFilePolicy = overwrite ? .overwrite : (skipExisting ? .skip : .rename)
        return (urls + extraURLs).map { url in
            var job = DownloadJob(url: url, outputDirectory: outputDirectory ?? (demo ? "haul-demo" : "."),
                                  outputName: output)
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
