import ArgumentParser
import CLinux
import FoundationEssentials
import Glibc
import HaulCore
import HaulTUI
import HaulTorrent

/// The command line of the SPEC, parsed. `Entry` runs it.
struct HaulCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "haul",
        abstract: "Download files over HTTP(S), fast, resumable, with progress.",
        discussion: """
            URLs are separate downloads, --jobs of them at once. Without a terminal on stdout (or with \
            --plain) progress is printed as lines; --json prints one JSON object per event.
            The queue: haul \(Verb.queueWords), and haul service start|stop|status \
            (each with --help); haul alone attaches the full-screen interface to the queue.
            Settings come from $XDG_CONFIG_HOME/haul/config.toml (~/.config/haul/config.toml) when it exists: \
            its keys are the long option names (jobs = 8, output-dir = "~/Downloads"); the command line wins.
            A file whose size is known and that does not fit the free space (less what running downloads \
            still need) is not started: exit 3 with nothing written; in the queue it waits as "no space" \
            until there is room.
            Exit codes: 0 all done, 1 other, 2 usage, 3 local file I/O (disk full, no room), 4 network, 5 TLS, \
            6 authentication, 7 protocol, 8 server error answer, 9 checksum mismatch, 10 cancelled, \
            129 stopped by SIGHUP, \
            130 interrupted (SIGINT), 143 stopped by SIGTERM.
            """,
        version: HaulVersion.string)

    @Argument(help: ArgumentHelp(
        "URLs to download (or a FILE.torrent, or a 'magnet:?xt=...' link: see Torrents and magnets); [1-100], [001-100], [a-z], [1-100:5] and {a,b,c} in one make a numbered series, as curl's (-O 'x#1' names each by its values; -g turns this off)."))
    var urls: [String] = []

    @Option(name: [.customShort("o"), .customLong("output-dir")],
            help: "Directory for the files (created if missing). Default: the current directory; haul-demo with --demo.")
    var outputDirectory: String?

    @Option(name: [.customShort("O"), .customLong("output")],
            help: "File name to save as (only with a single URL). With -o a plain name; without, a path (dir/name). '-' writes the file to standard output, in order (no .part, no resume).")
    var output: String?

    @Option(name: [.customShort("i"), .customLong("input-file")], help: "Read URLs from FILE, one per line, '#' comments; '-' reads stdin. A line naming a local .meta4/.metalink file is that metalink.")
    var inputFile: String?

    @Option(name: .customLong("mirror"), help: ArgumentHelp(
        "Another address of the same file (repeatable; only with a single URL): the download's sources share its connections.",
        valueName: "url"))
    var mirrors: [String] = []

    @Option(name: .customLong("max-connection-per-server"), help: ArgumentHelp(
        "Most of a download's connections to one host of its sources, \(Limits.segments); an sftp:// download left at one connection takes this many.",
        valueName: "n"))
    var maxConnectionPerServer = DownloadJob.defaultConnectionsPerServer

    @Flag(name: [.customShort("g"), .customLong("globoff")], help: "Take [ ] { } in URLs as they are: no numbered series.")
    var globoff = false
    @Option(name: [.customShort("M"), .customLong("metalink")], help: ArgumentHelp(
        "Download the files a metalink (RFC 5854 .meta4, or 3.0) describes, from its sources, checking its hashes (repeatable; a FILE.meta4 or FILE.metalink argument is one too). A URL answering a metalink is followed, in the service's queue too.",
        valueName: "file"))
    var metalink: [String] = []

    @Option(name: .customLong("metalink-location"), help: ArgumentHelp(
        "Prefer a metalink's sources in these countries, comma-separated codes (de,fr), after its priorities.",
        valueName: "list"))
    var metalinkLocation: String?

    @Option(name: [.customShort("j"), .customLong("jobs")], help: ArgumentHelp(
        "Downloads at once, \(Limits.jobs) (default \(DownloadManager.defaultConcurrency)); given to a service that runs already, its own from now on."))
    var jobs: Int?

    /// `--jobs`, or the default when not given.
    var concurrency: Int { jobs ?? DownloadManager.defaultConcurrency }

    /// `haul` alone or `haul attach`: the TUI on the service's queue, nothing added.
    @Flag(help: .hidden)
    var attach = false

    @Flag(help: "Start the bundled sample server on 127.0.0.1 (an ephemeral port) and download from it.")
    var demo = false

    @Option(name: [.customShort("s"), .customLong("segments")], help: "Connections per file (Range requests), \(Limits.segments); over sftp:// --max-connection-per-server unless given.")
    var segments = DownloadJob.defaultSegments

    @Flag(help: "Fetch each file front to back over its -s connections, so that it can be used (played) while it arrives.")
    var sequential = false

    @Option(help: "Browse a SuperStorage-API server (its /files/list) in the full-screen interface.")
    var server: String?

    @Flag(help: "Line output instead of the full-screen interface.")
    var plain = false

    @Flag(help: "One JSON object per event per line on stdout.")
    var json = false

    @Flag(name: .shortAndLong, help: "Print only errors.")
    var quiet = false

    @Option(help: "Retries per download on transient errors, each resuming where it stopped; \(Limits.retries).")
    var retries = DownloadJob.defaultRetries

    @Flag(name: .customLong("no-resume"), help: "Ignore partial state and start over.")
    var noResume = false

    @Flag(name: .customLong("no-partial-preview"), help: "Do not keep a partial JPEG preview on cancel.")
    var noPartialPreview = false

    @Option(help: "Fail a transfer that receives no bytes for this many seconds: 0 (never) or 0.1...2592000 (30 days).")
    var timeout = TransferOptions.defaults.stallTimeout

    @Option(name: .customLong("connect-timeout"), help: "Seconds allowed to connect, 0.1...2592000 (30 days).")
    var connectTimeout = TransferOptions.defaults.connectTimeout

    @Option(name: .customLong("limit-rate"), help: "Overall download rate cap, e.g. 500K, 2M; 1 byte/s to 1024G.")
    var limitRate: String?

    @Option(name: .customLong("max-download-limit"), help: ArgumentHelp(
        "Rate cap of each download on its own (all its connections together), e.g. 500K; aria2's option of that name.",
        valueName: "rate"))
    var maxDownloadLimit: String?

    @Option(help: "Verify the file: sha512=HEX, sha256=HEX, sha1=HEX or md5=HEX (single URL only; computed while the bytes stream).")
    var checksum: String?

    @Option(name: .customLong("checksum-file"), help: ArgumentHelp(
        "Verify every download whose name FILE lists ('HEX  NAME' as sha256sum writes it, or 'SHA256 (NAME) = HEX').",
        valueName: "file"))
    var checksumFile: String?

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
    var maxRedirects = TransferOptions.defaults.maxRedirects

    @Option(help: ArgumentHelp("PEM file of the certificate authorities to trust instead of the system's.", valueName: "file"))
    var cacert: String?

    @Option(help: ArgumentHelp("Directory of hashed CA certificates (c_rehash) to trust instead of the system's.", valueName: "dir"))
    var capath: String?

    @Option(help: ArgumentHelp(
        "Proxy [SCHEME://][USER:PASSWORD@]HOST[:PORT], SCHEME http, https, socks4(a) or socks5(h); \"\" for none. Default: http_proxy, https_proxy... from the environment.",
        valueName: "url"))
    var proxy: String?

    @Option(help: ArgumentHelp("Hosts reached without the proxy, comma-separated (* for all).", valueName: "list"))
    var noproxy: String?

    @Option(help: ArgumentHelp("Send from this interface, address or host name.", valueName: "name"))
    var interface: String?

    @Flag(name: [.customShort("4"), .customLong("ipv4")], help: "Resolve names to IPv4 addresses only.")
    var ipv4 = false

    @Flag(name: [.customShort("6"), .customLong("ipv6")], help: "Resolve names to IPv6 addresses only.")
    var ipv6 = false

    @Flag(name: .customLong("http1.1"), help: "Use HTTP/1.1 only.")
    var http1 = false

    @Flag(name: .customLong("http2"), help: "Use HTTP/2 (over TLS as negotiated, and h2c on http://).")
    var http2 = false

    @Option(name: [.customShort("u"), .customLong("user")], help: ArgumentHelp(
        "Login for HTTP Basic authentication, FTP and SSH; without :PASSWORD it is asked for on the terminal, unechoed.",
        valueName: "user[:password]"))
    var user: String?

    @Flag(help: "Look the login for each host up in ~/.netrc.")
    var netrc = false

    @Option(name: .customLong("netrc-file"), help: ArgumentHelp("Look logins up in FILE (implies --netrc).", valueName: "file"))
    var netrcFile: String?

    @Flag(name: .customLong("ssl-reqd"), help: "Require TLS on ftp:// (AUTH TLS), or fail; ftps:// is TLS from the start. A config key too.")
    var sslRequired = false

    @Option(name: .customLong("ssh-host-key"), help: ArgumentHelp(
        "Accept exactly this SSH host key for sftp:// and scp:// (as ssh-keygen -l prints it), in place of ~/.ssh/known_hosts; a config key too.",
        valueName: "SHA256:base64"))
    var sshHostKey: String?

    @Option(name: .customLong("load-cookies"), help: ArgumentHelp("Send cookies from FILE (Netscape cookies.txt, as browsers export it).", valueName: "file"))
    var loadCookies: String?

    @Option(name: .customLong("save-cookies"), help: ArgumentHelp("Write the cookies (loaded and received) to FILE when a download ends.", valueName: "file"))
    var saveCookies: String?

    @Flag(name: [.customShort("N"), .customLong("timestamping")],
          help: "Fetch a file that exists only if the server's is newer (If-Modified-Since its mtime); replace it then.")
    var timestamping = false

    @Flag(name: .customLong("no-remote-time"), help: "Leave a downloaded file's mtime at now, not the server's Last-Modified.")
    var noRemoteTime = false

    @Flag(name: .customLong("no-sync"), help: ArgumentHelp(
        "Give a finished file its name without waiting for the disk (as curl and wget do): faster for many small files, but a power loss soon after may leave it short."))
    var noSync = false

    @Option(name: .customLong("on-complete"), help: ArgumentHelp(
        "Run CMD when a download is done, with HAUL_FILE, HAUL_URL, HAUL_SIZE... in its environment (no shell unless --hook-shell).",
        valueName: "cmd"))
    var onComplete: String?

    @Option(name: .customLong("on-error"), help: ArgumentHelp(
        "Run CMD when a download fails (not when cancelled), with HAUL_ERROR and HAUL_EXIT_CODE too.", valueName: "cmd"))
    var onError: String?

    @Flag(name: .customLong("hook-shell"), help: "Run --on-complete, --on-error and --refresh-with with /bin/sh -c.")
    var hookShell = false

    @Option(name: .customLong("start-at"), help: ArgumentHelp(
        "Wait as scheduled until this local time (the next time the clock shows it), then start; with the service (haul add, the full screen).",
        valueName: "HH:MM"))
    var startAt: String?

    @Option(name: .customLong("referer"), help: ArgumentHelp(
        "Send URL as the Referer header; it stays with the download ({referer} in --refresh-with).", valueName: "url"))
    var referer: String?

    @Option(name: .customLong("refresh-with"), help: ArgumentHelp(
        "When an address stops serving the file (401, 403, 404, 410), run CMD and continue from the address on the first line of its output; {url}, {origin}, {referer} and HAUL_URL, HAUL_ORIGIN_URL, HAUL_REFERER, HAUL_NAME, HAUL_ID say which (no shell unless --hook-shell).",
        valueName: "cmd"))
    var refreshWith: String?

    @Option(help: ArgumentHelp(
        "How pictures are drawn: kitty, sixel, iterm, symbols or none (default: what the terminal supports; symbols inside tmux or screen).",
        valueName: "mode"))
    var pictures: PictureMode?

    /// `--select-file`, `--bt-tracker` and the other options of torrents and magnets.
    @OptionGroup(title: "Torrents and magnets") var torrent: TorrentOptions

    @Flag(name: .customLong("no-notify"), help: "No desktop notification (OSC 9/777) when a long download is done in the full screen.")
    var noNotify = false

    /// `--user`'s password, asked for on the terminal once (`askForPassword`); never an argument.
    var password: String?

    // Taken out of the arguments before they are parsed (`ConfigFile.select`): here for the help only.
    @Option(name: .customLong("config"), help: ArgumentHelp(
        "Read settings from FILE instead of $XDG_CONFIG_HOME/haul/config.toml (~/.config/haul/config.toml).",
        valueName: "file"))
    var configFile: String?

    @Flag(name: .customLong("no-config"), help: "Read no config file.")
    var noConfig = false

    /// `--category`, and the config file's categories.
    @OptionGroup var categories: CategorySettings

    /// Every number from the command line is checked here, before anything converts it: a value out of
    /// range is a one-line usage error that names the option and the range, never a trap further down.
    func validate() throws {
        // The URLs named, each pattern's series counted (an input file's count as two: more than one).
        let named = try checkSeries() + (inputFile == nil ? 0 : 2)
        try checkStandardOutput(named: named)
        if output != nil && named > 1 && !outputNamesEach {
            throw ValidationError("--output takes a single URL (or #1, #2... for the values of a numbered series)")
        }
        if !mirrors.isEmpty {
            if named != 1 { throw ValidationError("--mirror takes a single URL") }
            do { _ = try JobOptions.sources(urls + mirrors) } catch { throw ValidationError("--" + error.message) }
        }
        if let jobs { try Limits.check("--jobs", jobs, Limits.jobs) }
        try Limits.check("--segments", segments, Limits.segments)
        try Limits.check("--max-connection-per-server", maxConnectionPerServer, Limits.segments)
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
        if let maxDownloadLimit, RateLimit.parse(maxDownloadLimit) == nil {
            throw ValidationError("--max-download-limit: '\(maxDownloadLimit)' is not a rate such as 500K or 2M, from 1 (byte/s) to 1024G")
        }
        if overwrite && skipExisting { throw ValidationError("--overwrite and --skip-existing exclude each other") }
        if timestamping && skipExisting { throw ValidationError("-N and --skip-existing exclude each other") }
        if let output { _ = try Self.placement(output: output, outputDirectory: outputDirectory) }
        if let checksum {
            if case .failure(let error) = Checksum.parse(checksum) { throw ValidationError(error.message) }
            if named > 1 { throw ValidationError("--checksum takes a single URL") }
        }
        if let checksumFile, case .failure(let error) = ChecksumFile.read(checksumFile) {
            throw ValidationError(error.message)
        }
        for header in headers where !header.contains(":") {
            throw ValidationError("--header '\(header)' is not \"Name: value\"")
        }
        if ipv4 && ipv6 { throw ValidationError("-4 and -6 exclude each other") }
        if let referer, referer.isEmpty || referer.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw ValidationError("--referer '\(referer)' is empty or holds control characters")
        }
        for (option, command) in [("--on-complete", onComplete), ("--on-error", onError), ("--refresh-with", refreshWith)] {
            if let command, Hook(command: command, shell: hookShell).argv == nil {
                throw ValidationError("\(option) '\(command)': an unclosed quote, or no command")
            }
        }
        if http1 && http2 { throw ValidationError("--http1.1 and --http2 exclude each other") }
        if let startAt, TimeWindow.timeOfDay(startAt) == nil {
            throw ValidationError("--start-at \(startAt): not a time of day such as 23:30")
        }
        try Self.checkReadable("--cacert", cacert, directory: false)
        try Self.checkReadable("--capath", capath, directory: true)
        try Self.checkReadable("--netrc-file", netrcFile, directory: false)
        try Self.checkReadable("--load-cookies", loadCookies, directory: false)
        if let proxy, !proxy.isEmpty, let scheme = proxy.firstRange(of: "://").map({ proxy[..<$0.lowerBound].lowercased() }),
           !["http", "https", "socks4", "socks4a", "socks5", "socks5h"].contains(scheme) {
            throw ValidationError("--proxy \(URLRedaction.masked(proxy)): the scheme must be http, https, socks4, socks4a, socks5 or socks5h")
        }
        if let sshHostKey, let problem = SSHFingerprint.problem(with: sshHostKey) {
            throw ValidationError("--ssh-host-key '\(sshHostKey)' \(problem)")
        }
        if let user, user.isEmpty || user.hasPrefix(":") { throw ValidationError("--user needs a USER name") }
        if urls.isEmpty && inputFile == nil && metalink.isEmpty && !demo && server == nil && !attach {
            throw ValidationError("no URL given")
        }
    }

    /// `--cacert` and the like name a file (or directory) that must be there now: one line, exit 2,
    /// before anything starts, rather than a TLS failure per download.
    static func checkReadable(_ option: String, _ path: String?, directory: Bool) throws {
        guard let path else { return }
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ValidationError("\(option) \(path): no such \(directory ? "directory" : "file")")
        }
        if isDirectory != directory {
            throw ValidationError("\(option) \(path): \(directory ? "not a directory" : "a directory, not a file")")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw ValidationError("\(option) \(path): not readable")
        }
    }

    /// The login of `--user`: `USER:PASSWORD` splits at the first colon; `USER` alone gets its password
    /// from the terminal (unechoed), as curl asks. Called once, before any download is made.
    mutating func askForPassword() throws(HaulError) {
        guard let user, password == nil else { return }
        if let colon = user.firstIndex(of: ":") {
            password = String(user[user.index(after: colon)...])
            self.user = String(user[..<colon])
            return
        }
        password = try PasswordPrompt.read(prompt: "Enter host password for user '\(user)': ")
    }

    /// Where `-O` puts the file: `-O` names a file. With `-o DIR` it must be a plain name (no `/`, not `.`
    /// or `..`, not empty, no control characters), so nothing lands outside DIR; without `-o`, `-O a/b/x.bin`
    /// means directory `a/b` and name `x.bin`. The name handed to the download never contains a `/`.
    static func placement(output: String, outputDirectory: String?) throws -> (directory: String?, name: String) {
        var directory = outputDirectory
        var name = output
        // Split at the last `/` byte, as the kernel would (a combining mark after it does not hide it).
        if outputDirectory == nil, let slash = output.utf8.lastIndex(of: UInt8(ascii: "/")) {
            let parent = String(output[..<slash])
            directory = parent.isEmpty ? "/" : parent
            name = String(output[output.utf8.index(after: slash)...])
        }
        let problem: String? =
            if name.isEmpty && !output.isEmpty { "ends in '/', not in a file name" }
            else if FilePath.hasSeparator(name) { "must be a plain file name with --output-dir, not a path" }
            else { FileNaming.problem(withPlainName: name) }
        if let problem { throw ValidationError("--output '\(output)' \(problem)") }
        return (directory, name)
    }

    /// `--limit-rate`, shared by all transfers together.
    var overallRate: Int64? { limitRate.flatMap(RateLimit.parse) }

    /// The options every transfer of this command line gets: its downloads', and the files view's listing.
    var transferOptions: TransferOptions {
        var options = TransferOptions()
        options.stallTimeout = timeout
        options.connectTimeout = connectTimeout
        options.maxRedirects = maxRedirects
        options.insecure = insecure
        if let userAgent { options.userAgent = userAgent }
        // Paths go to the service, whose current directory is not this one.
        options.proxy = proxy
        options.noProxy = noproxy
        options.caCertificates = cacert.map(FilePath.absolute)
        options.caDirectory = capath.map(FilePath.absolute)
        options.interface = interface
        options.ipVersion = ipv4 ? .v4 : (ipv6 ? .v6 : nil)
        options.httpVersion = http1 ? .http1_1 : (http2 ? .http2 : nil)
        options.user = user.map { $0.split(separator: ":", maxSplits: 1).first.map(String.init) ?? $0 }
        options.password = password
        options.netrc = netrc || netrcFile != nil
        options.netrcFile = netrcFile.map(FilePath.absolute)
        options.sslRequired = sslRequired
        options.sshHostKey = sshHostKey
        options.cookieFile = loadCookies.map(FilePath.absolute)
        options.cookieJar = saveCookies.map(FilePath.absolute)
        options.maxReceiveRate = maxDownloadLimit.flatMap(RateLimit.parse)
        return options
    }

    /// The downloads this command line asks for, in order. With `absolute`, the output directory is made
    /// absolute against the current one (for the service, whose current directory is not the client's).
    func downloads(extra: [InputEntry], absolute: Bool = false) -> [DownloadJob] {
        let maker = jobMaker(absolute: absolute)
        return (commandLineEntries() + extra).map(maker.job)
    }

    /// What turns a URL (and its input file's options) into a job with this command line's options, read once.
    func jobMaker(absolute: Bool = false) -> JobMaker {
        let options = transferOptions
        let policy: ExistingFilePolicy = overwrite ? .overwrite : (skipExisting ? .skip : .rename)
        // `validate` has refused an `-O` that `placement` throws for.
        let placed = output.flatMap { try? Self.placement(output: $0, outputDirectory: outputDirectory) }
        var directory = placed?.directory ?? outputDirectory ?? (demo ? "haul-demo" : ".")
        if absolute && !directory.hasPrefix("/") {
            let here = FileManager.default.currentDirectoryPath
            directory = directory == "." ? here : FilePath.join(here, directory)
        }
        // The job every URL starts from, built once: an option's value read through its property wrapper
        // cost 500 instructions, and the loop read eleven of them per URL (6 ms for 1000 URLs).
        var template = DownloadJob(url: "", outputDirectory: directory, outputName: placed?.name)
        template.existingFile = policy
        template.headers = headers
        template.transfer = options
        template.retries = retries
        template.resume = !noResume
        template.partialPreview = !noPartialPreview
        template.segments = segments
        template.sequential = sequential
        template.connectionsPerServer = maxConnectionPerServer
        template.checksum = checksum.flatMap { try? Checksum.parse($0).get() }
        template.onComplete = onComplete.map { Hook(command: $0, shell: hookShell) }
        template.onError = onError.map { Hook(command: $0, shell: hookShell) }
        template.refreshWith = refreshWith.map { Hook(command: $0, shell: hookShell) }
        if let referer {
            template.headers.removeAll { $0.lowercased().hasPrefix("referer:") }
            template.headers.append("Referer: \(referer)")
        }
        template.timestamping = timestamping
        template.remoteTime = !noRemoteTime
        template.sync = !noSync
        template.category = categories.requested
        template.startAfter = startAt.flatMap { TimeWindow.timeOfDay($0) }.map { GateSettings.nextTime(at: $0) }
        return JobMaker(template: template, absolute: absolute,
                        listed: checksumFile.flatMap { try? ChecksumFile.read($0).get() } ?? [:],
                        torrent: torrent.spec)
    }
}

/// A command line's options, read once, for the jobs of any number of URLs (`HaulCommand.jobMaker`).
struct JobMaker: Sendable {
    let template: DownloadJob
    let absolute: Bool
    /// `--checksum-file`'s digests by file name.
    let listed: [String: Checksum]
    /// The torrent options of the command line, for a magnet's or a .torrent's job.
    let torrent: TorrentSpec

    func job(_ entry: InputEntry) -> DownloadJob {
        var job = template
        job.url = entry.url
        if let source = TorrentJob.source(of: entry.url) {
            // libtorrent runs it; the service gets the .torrent's bytes, as aria2's addTorrent does.
            var spec = torrent
            switch source {
            case .magnet(let link): spec.magnet = link
            case .file(let path):
                spec.metainfo = try? TorrentFiles.read(path, limit: TorrentMetadata.maxTorrentBytes)
                if absolute { job.url = FilePath.absolute(path) }
            case .metainfo(let bytes, _): spec.metainfo = bytes
            }
            job.torrent = spec
            entry.options.apply(to: &job, absolute: absolute)
            return job
        }
        if !entry.mirrors.isEmpty { job.sources += entry.mirrors.map { DownloadSource(url: $0) } }
        entry.options.apply(to: &job, absolute: absolute)
        if job.checksum == nil, !listed.isEmpty {
            job.checksum = listed[job.plannedName]
        }
        return job
    }
}

/// The ranges of the command line's numbers, shown in the help and checked by `HaulCommand.validate`.
enum Limits {
    static let jobs = DownloadManager.concurrencyRange
    static let segments = JobOptions.segmentRange
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
