import ArgumentParser
import Foundation
import SampleServer

@main
struct SampleServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sample-server",
        abstract: "A SuperStorage-API file server for trying out and testing download clients.",
        discussion: """
            Serves GET /files/list (JSON), GET /files/status (text) and GET|HEAD /files/download?NAME with \
            Range, If-Range, ETag and Last-Modified support. The files are deterministic binaries generated on \
            the fly (small.bin 1 MiB, medium.bin 20 MiB, large.bin 200 MiB, huge.bin 1 GiB), progressive JPEGs \
            (photo-small.jpg, photo-medium.jpg, photo-large.jpg) and, with --root, real files. The fault options \
            make downloads fail the way real networks and servers do. Stop with Ctrl-C.
            """)

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one.")
    var port = 8080

    @Option(
        help: ArgumentHelp(
            "Throttle each download response to this many bytes per second (suffixes K, M, G: powers of 1024).",
            valueName: "bytes"))
    var rate: ByteCount?

    @Option(help: ArgumentHelp("Also serve the regular files in this directory (nothing outside it).", valueName: "dir"))
    var root: String?

    @Option(name: .customLong("chunks-per-second"),
            help: ArgumentHelp("Pieces a second a throttled body is written in (default 20).", valueName: "n"))
    var chunksPerSecond = 20

    @Flag(help: "Do not serve the generated JPEGs.")
    var noJpegs = false

    @Flag(name: .shortAndLong, help: "Do not log requests on stderr.")
    var quiet = false

    @Option(help: ArgumentHelp("Fault: close the connection after this many body bytes.", valueName: "bytes"))
    var dropAfter: ByteCount?

    @Option(help: ArgumentHelp("Fault: drop only this many responses (default: every one).", valueName: "n"))
    var dropLimit: Int?

    @Option(help: ArgumentHelp("Fault: answer 503 to the first K download requests.", valueName: "k"))
    var unavailable = 0

    @Option(help: ArgumentHelp("Retry-After value sent with the 503 answers.", valueName: "seconds"))
    var retryAfter = 1

    @Option(help: ArgumentHelp(
        "Fault: answer 503 to a download request while this many bodies are being sent (a limit on a client's "
            + "connections, as nginx's limit_conn).", valueName: "n"))
    var bodiesAtOnce: Int?

    @Option(help: ArgumentHelp("Fault: pause each response body this long (see --stall-after).", valueName: "seconds"))
    var stall: Double?

    @Option(help: ArgumentHelp("Where in each response body the pause happens (default: 0).", valueName: "bytes"))
    var stallAfter: ByteCount?

    @Flag(help: "Fault: answer 200 with the whole file even when a Range is asked for.")
    var ignoreRange = false

    @Option(help: ArgumentHelp(
        "Fault: answer a Range with other bytes: from-start, shifted:N (ranges not at byte 0 move by N), wrong-total.",
        valueName: "kind"))
    var wrongRange: String?

    @Flag(help: "Fault: send neither ETag nor Last-Modified.")
    var noValidators = false

    @Option(help: ArgumentHelp("Fault: mix this text into ETag and Last-Modified, as if every file changed.", valueName: "text"))
    var etagSalt: String?

    @Flag(help: "Fault: answer a Range with 206 even when If-Range names another version of the file.")
    var ignoreIfRange = false

    @Option(help: ArgumentHelp("Fault: send this Content-Disposition value instead of the file's own.", valueName: "value"))
    var contentDisposition: String?

    @Option(help: ArgumentHelp("Apply the faults to this file only.", valueName: "name"))
    var only: String?

    func validate() throws {
        if let rate, rate.value <= 0 {
            throw ValidationError("--rate must be positive")
        }
        if !(0...65_535).contains(port) {
            throw ValidationError("--port must be between 0 and 65535")
        }
        if let bodiesAtOnce, bodiesAtOnce < 1 {
            throw ValidationError("--bodies-at-once must be at least 1")
        }
        if unavailable < 0 || retryAfter < 0 || (dropLimit ?? 0) < 0 || (stall ?? 0) < 0 {
            throw ValidationError("counts and durations must not be negative")
        }
        if let wrongRange, Self.rangeFault(wrongRange) == nil {
            throw ValidationError("--wrong-range takes from-start, shifted:N or wrong-total")
        }
    }

    /// `from-start`, `shifted:N`, `wrong-total`.
    static func rangeFault(_ text: String) -> SampleServerFaults.RangeFault? {
        switch text {
        case "from-start": return .fromStart
        case "wrong-total": return .wrongTotal
        default:
            guard text.hasPrefix("shifted:"), let delta = Int(text.dropFirst(8)) else { return nil }
            return .shifted(delta)
        }
    }

    func run() async throws {
        let log: (@Sendable (String) -> Void)? = quiet ? nil : logToStandardError
        let server: SampleServer
        var configuration = SampleServerConfiguration(
            host: host, port: port, rate: rate?.value, root: root, jpegs: !noJpegs, requestLog: log)
        configuration.chunksPerSecond = max(1, min(1_000, chunksPerSecond))
        do {
            server = try await SampleServer.start(configuration)
        } catch {
            logToStandardError("sample-server: \(error)")
            throw ExitCode.failure
        }
        server.setFaults(faults)
        var banner = "\(server.statusLine)\nListening on \(server.baseURL)  (list: \(server.baseURL)/files/list)\n"
        for entry in server.catalog {
            banner += "  \(entry.name)  \(entry.size) bytes  \(server.downloadURL(entry.name))\n"
        }
        FileHandle.standardOutput.write(Data(banner.utf8))
        try await server.waitUntilStopped()
    }

    private var faults: SampleServerFaults {
        var faults = SampleServerFaults()
        faults.dropAfterBytes = dropAfter?.value
        faults.dropLimit = dropLimit
        faults.unavailableCount = unavailable
        faults.retryAfterSeconds = retryAfter
        faults.bodiesAtOnce = bodiesAtOnce
        faults.stallSeconds = stall
        faults.stallAfterBytes = stallAfter?.value ?? 0
        faults.ignoreRange = ignoreRange
        faults.wrongRange = wrongRange.flatMap(Self.rangeFault)
        faults.omitValidators = noValidators
        faults.etagSalt = etagSalt
        faults.ignoreIfRange = ignoreIfRange
        faults.contentDisposition = contentDisposition
        faults.only = only
        return faults
    }
}

@Sendable private func logToStandardError(_ line: String) {
    FileHandle.standardError.write(Data("\(line)\n".utf8))
}

/// A byte count written as a plain number or with a K, M or G suffix (powers of 1024).
struct ByteCount: ExpressibleByArgument, Sendable {
    let value: Int

    init?(argument: String) {
        let multipliers: [Character: Int] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
        var digits = Substring(argument)
        var multiplier = 1
        if let last = digits.last?.uppercased().first, let factor = multipliers[last] {
            multiplier = factor
            digits = digits.dropLast()
        }
        guard let number = Int(digits), number >= 0 else { return nil }
        value = number * multiplier
    }
}
