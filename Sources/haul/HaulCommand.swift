import ArgumentParser
import HaulCore

/// The command line of the SPEC, parsed. `Entry` runs it.
struct HaulCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "haul",
        abstract: "Download files over HTTP(S), fast, resumable, with progress.",
        discussion: """
            URLs are separate downloads, fetched one after another. Without a terminal on stdout (or with \
            --plain) progress is printed as lines; --json prints one JSON object per event.
            Exit codes: 0 all done, 1 other, 2 usage, 3 local file I/O, 4 network, 5 TLS, 6 authentication, \
            7 protocol, 8 server error answer, 10 cancelled, 130 interrupted (SIGINT).
            """,
        version: HaulVersion.string)

    @Argument(help: "URLs to download.")
    var urls: [String] = []

    @Option(name: [.customShort("o"), .customLong("output-dir")], help: "Directory for the files (created if missing).")
    var outputDirectory = "."

    @Option(name: [.customShort("O"), .customLong("output")], help: "File name to save as (only with a single URL).")
    var output: String?

    @Option(name: [.customShort("i"), .customLong("input-file")], help: "Read URLs from FILE, one per line, '#' comments; '-' reads stdin.")
    var inputFile: String?

    @Flag(help: "Line output instead of the full-screen interface.")
    var plain = false

    @Flag(help: "One JSON object per event per line on stdout.")
    var json = false

    @Flag(name: .shortAndLong, help: "Print only errors.")
    var quiet = false

    @Option(help: "Fail a transfer that receives no bytes for this many seconds.")
    var timeout: Double = 30

    @Option(name: .customLong("connect-timeout"), help: "Seconds allowed to connect.")
    var connectTimeout: Double = 15

    @Option(name: .customLong("limit-rate"), help: "Overall download rate cap, e.g. 500K, 2M.")
    var limitRate: String?

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
        if overwrite && skipExisting { throw ValidationError("--overwrite and --skip-existing exclude each other") }
        if timeout < 0 || !timeout.isFinite { throw ValidationError("--timeout must be 0 or more seconds") }
        if connectTimeout <= 0 || !connectTimeout.isFinite { throw ValidationError("--connect-timeout must be more than 0 seconds") }
        if maxRedirects < 0 { throw ValidationError("--max-redirs must be 0 or more") }
        if let limitRate, RateLimit.parse(limitRate) == nil {
            throw ValidationError("--limit-rate: '\(limitRate)' is not a rate such as 500K or 2M")
        }
        for header in headers where !header.contains(":") {
            throw ValidationError("--header '\(header)' is not \"Name: value\"")
        }
        if urls.isEmpty && inputFile == nil { throw ValidationError("no URL given") }
    }

    /// The downloads this command line asks for, in order.
    func jobs(extraURLs: [String]) -> [DownloadJob] {
        var options = TransferOptions()
        options.stallTimeout = timeout
        options.connectTimeout = connectTimeout
        options.maxRedirects = maxRedirects
        options.insecure = insecure
        if let userAgent { options.userAgent = userAgent }
        // Downloads run one at a time, so the per-transfer cap is the overall cap.
        options.maxReceiveRate = limitRate.flatMap(RateLimit.parse)
        let policy: ExistingFilePolicy = overwrite ? .overwrite : (skipExisting ? .skip : .rename)
        return (urls + extraURLs).map { url in
            var job = DownloadJob(url: url, outputDirectory: outputDirectory, outputName: output)
            job.existingFile = policy
            job.headers = headers
            job.transfer = options
            return job
        }
    }
}
