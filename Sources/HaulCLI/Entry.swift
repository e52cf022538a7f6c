import ArgumentParser
import CLinux
import Dispatch
import FoundationEssentials
import Glibc
import HaulCore
import HaulServiceClient
import NIOConcurrencyHelpers

/// Parses the command line, runs the downloads with the right reporter, and exits with the SPEC's code.
/// `haul` and `haul-server` (the same with the service and the sample server: `ServerParts`) call `main`.
package enum Entry {
    package static func main(server: (any ServerParts)?) async {
        // Other local users can read a process's arguments: a `--user` password is blanked in them at once.
        ArgumentScrub.hidePasswords()
        var arguments = Array(CommandLine.arguments.dropFirst())
        // Downloads, the screen and the service's clients (its socket is spoken through curl) need curl:
        // loading libcurl (and its thirty libraries), OpenSSL's and curl's init, the multi handle and its
        // thread take several milliseconds, which the other core spends while this one reads the config file
        // and parses the command line (the runtime's first conformance lookups), instead of after. The load is
        // the longer of the two, so it begins before anything else here.
        if Verb.mayUseCurl(arguments) { CurlDriver.prepareInBackground() }
        // A write past the file-size limit (`ulimit -f`) fails with EFBIG, as a full disk fails with ENOSPC:
        // the download ends with exit 3 and its part kept. The threads that write parts have signals blocked
        // (they inherit it from the runtime's), but on a thread that has not, the kernel's default would kill
        // haul at that write, with no message and the terminal in the full screen's modes. (Programs haul
        // starts get the default back: `ChildProcess.resetSignals`.)
        signal(SIGXFSZ, SIG_IGN)
        // Downloads (and the runtime) need more descriptors than the usual soft limit of 1024 allows at
        // `-j 64 -s 16`: raised to the hard limit (`OpenFilesLimit`).
        OpenFilesLimit.raise()
        ServerSide.install(server)
        let config: ConfigFile?
        do {
            let selection: ConfigFile.Selection
            (selection, arguments) = try ConfigFile.select(arguments)
            config = try ConfigFile.load(selection, environment: ProcessInfo.processInfo.environment)
            try config?.check()
        } catch {
            exit(CommandLineExit.code(for: error, parsing: HaulCommand.self, prefix: "haul: "))
        }
        if server == nil && Verb.startsService(arguments) { ServerSide.execServer() }
        switch Verb(arguments) {
        case .verify?: exit(VerifyCommand.run(Array(arguments.dropFirst())))
        case .view?:
            // The config file's `pictures` key holds for `haul view` too; the command line's option wins.
            let configured = config?.entries.filter { $0.key == "pictures" }.flatMap(\.arguments) ?? []
            exit(ViewCommand.run(configured + arguments.dropFirst(), environment: ProcessInfo.processInfo.environment))
        case .help?:
            // `haul help [VERB...]`, as the verbs' help suggests: a queue verb's help from the session commands'
            // parser, anything else the downloads' (no URL is named `help`: it would not be one).
            if arguments.count > 1 && Verb(rawValue: arguments[1])?.isSession == true {
                await runSessionCommandAndExit(arguments, config: config)
            }
            print(HaulCommand.helpMessage())
            exit(0)
        case .add?, .ls?, .pause?, .resume?, .cancel?, .retry?, .refresh?, .rm?, .move?, .service?:
            await runSessionCommandAndExit(arguments, config: config)
        case .attach?, nil:
            // A download's command line, or `haul attach` (below).
            break
        }
        // `haul` alone or `haul attach` on a terminal: the TUI, attached to the service's queue.
        let attaching = arguments.isEmpty || arguments == ["attach"]
        let command: HaulCommand
        do {
            command = try parse(HaulCommand.self, attaching ? ["--attach"] : arguments, config: config)
        } catch {
            exit(CommandLineExit.code(for: error, parsing: HaulCommand.self, prefix: "haul: "))
        }
        if command.demo && server == nil { ServerSide.execServer() }
        var ready = command
        do { try ready.askForPassword() } catch {
            exit(CommandLineExit.code(for: error, parsing: HaulCommand.self, prefix: "haul: "))
        }
        await runAndExit(ready)
    }

    // These two exit on the thread that knows the code. Back in `main` the code would first hop to the main
    // actor, whose queue dispatch drains on a thread it starts for the purpose (the main thread is parked in
    // `dispatch_main`): a thread's start and its malloc arena, about a millisecond, at the end of every run.

    nonisolated private static func runAndExit(_ command: HaulCommand) async -> Never {
        exit(await run(command))
    }

    nonisolated private static func runSessionCommandAndExit(_ arguments: [String], config: ConfigFile?) async -> Never {
        exit(await SessionCommands.run(arguments, config: config))
    }

    /// `arguments` parsed after the config file's download options.
    static func parse(_ type: HaulCommand.Type, _ arguments: [String], config: ConfigFile?) throws -> HaulCommand {
        guard var config else { return try HaulCommand.parse(arguments) }
        let alone = try? HaulCommand.parse(arguments)
        // `-O -` on the command line: the file's settings for downloads to disk (connections, mirrors, a folder,
        // hooks that name a file) are not for a stream to standard output, which would refuse them as it refuses
        // them given on the command line. A command line that does not parse alone fails below as it is.
        if alone?.writesToStandardOutput == true {
            config = config.without(HaulCommand.standardOutputIgnoredKeys)
        }
        var command = try config.parse(.download, arguments) { try HaulCommand.parse($0) }
        // The config's `output-dir` is the default the categories place files from; a directory this command
        // line names is the user's own choice, which they do not override.
        if !command.categories.encodedRules.isEmpty, let alone {
            command.categories.directoryGiven = alone.outputDirectory != nil
                || (alone.output.flatMap { try? HaulCommand.placement(output: $0, outputDirectory: nil).directory } != nil)
        }
        return command
    }

    /// The URLs of `-i FILE` and their options; on a problem, the exit code after its line on stderr.
    static func inputURLs(_ command: HaulCommand) -> InputURLs {
        guard let input = command.inputFile else { return .success([]) }
        switch InputFile.entries(from: input) {
        case .success(let urls):
            if command.urls.isEmpty && urls.isEmpty {
                TextOutput.standard.err("haul: \(input): no URL in the input")
                return .failure(FailureCategory.usage.exitCode)
            }
            return .success(urls)
        case .failure(let error):
            TextOutput.standard.err("haul: \(input): \(error.message)")
            return .failure(error.category.exitCode)
        }
    }

    enum InputURLs {
        case success([InputEntry])
        case failure(Int32)
    }

    static func run(_ command: HaulCommand) async -> Int32 {
        // Only when there is one: the driver may still be starting on the other core (`main`).
        if let rate = command.overallRate { CurlDriver.shared.setOverallReceiveRate(rate) }
        var extra: [InputEntry] = []
        switch inputURLs(command) {
        case .success(let urls): extra = urls
        case .failure(let code): return code
        }
        // A .torrent file or a magnet: libtorrent's engine, in this process (the queue takes them later).
        if let torrents = TorrentRun.sources(command) { return await TorrentRun.run(command, sources: torrents) }
        // `-O -`: never the queue, nor the full screen: the bytes go to this process's standard output.
        if command.writesToStandardOutput { return await StandardOutputRun.run(command) }
        let listed: [InputEntry]
        (extra, listed) = HaulCommand.separatingMetalinks(extra)
        let metalinks: (jobs: [DownloadJob], code: Int32)
        switch command.metalinkDownloads(absolute: TUILaunch.wanted(command), listed: listed) {
        case .success(let jobs, let code): metalinks = (jobs, code)
        case .failure(let code): return code
        }
        if TUILaunch.wanted(command), let code = await TUILaunch.run(command, extraURLs: extra, jobs: metalinks.jobs) {
            return code
        }
        if command.startAt != nil {
            TextOutput.standard.err("haul: --start-at waits in the service: use haul add --start-at (or the full screen)")
            return FailureCategory.usage.exitCode
        }
        if command.attach {
            TextOutput.standard.err("haul: no URL given (haul alone attaches the full-screen interface to the queue, "
                                    + "which needs a terminal; haul ls lists it)")
            return FailureCategory.usage.exitCode
        }
        if command.server != nil && command.urls.isEmpty && extra.isEmpty && !command.demo {
            TextOutput.standard.err("haul: --server browses files in the full-screen interface: run it on a terminal, or give URLs")
            return FailureCategory.usage.exitCode
        }
        var demoServer: (any DemoServer)?
        if command.demo {
            guard let server = await Demo.start(rate: Demo.rate) else { return FailureCategory.other.exitCode }
            demoServer = server
            extra += Demo.files.map { InputEntry(url: server.downloadURL($0)) }
            if !command.json && !command.quiet {
                TextOutput.standard.out("Sample server on \(server.baseURL): \(server.statusLine)")
            }
        }
        // The one clock of the run: the downloads wait and measure by it, the run and its lines are timed by it.
        let clock = ContinuousClock()
        let reporter: any Reporter = command.json
            ? JSONReporter() : PlainReporter(quiet: command.quiet, clock: MomentClock(clock))
        // The first of SIGINT, SIGTERM, SIGHUP to arrive: it decides the failure lines and the exit code.
        let stoppedBy = NIOLockedValueBox<FailureCategory?>(nil)
        var downloader = Downloader(clock: clock)
        downloader.categories = command.categories.rules
        let run = DownloadRun(downloader: downloader, concurrency: command.concurrency,
                              reporter: reporter, interrupted: { stoppedBy.withLockedValue { $0 } })
        let jobs = metalinks.jobs + command.downloads(extra: extra)

        let signals = SignalStream([SIGINT, SIGTERM, SIGHUP])
        let summary = await withTaskGroup(of: RunSummary?.self) { group in
            group.addTask { await run.run(jobs) }
            group.addTask {
                for await number in signals.stream {
                    guard let category = FailureCategory.stopped(by: number) else { continue }
                    // A second signal leaves at once; the first stops cleanly: every download takes a last
                    // checkpoint, so `NAME.part` and its state stay resumable.
                    let again = stoppedBy.withLockedValue { first in
                        defer { first = first ?? category }
                        return first != nil
                    }
                    if again { _exit(category.exitCode) }
                    await run.manager.cancelAll()
                }
                return nil
            }
            let summary = await group.next()!
            group.cancelAll()
            signals.stop()
            return summary!
        }
        await demoServer?.stop()
        return aggregateExitCode([summary.exitCode, metalinks.code])
    }
}

/// Signals delivered as an `AsyncStream` of their numbers (their default actions are turned off while it
/// lives). `@unchecked`: the dispatch sources are only resumed in `init` and cancelled in `stop`, both
/// thread-safe.
package final class SignalStream: @unchecked Sendable {
    package let stream: AsyncStream<Int32>
    private let sources: [any DispatchSourceSignal]
    private let continuation: AsyncStream<Int32>.Continuation

    package init(_ signalNumbers: [Int32]) {
        (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        sources = signalNumbers.map { [continuation] number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
    }

    package func stop() {
        for source in sources { source.cancel() }
        continuation.finish()
    }
}

/// `--demo`: the sample server in this process, throttled per connection so progress is visible.
enum Demo {
    static let files = ["medium.bin", "photo-large.jpg", "small.bin"]
    /// Per-connection rate of the line-output demo.
    static let rate = 8 << 20
    /// Per-connection rate in the full-screen interface: a 20 MiB file takes 5 s over one connection,
    /// about 1.3 s in four parts, so the bars visibly move.
    static let screenRate = 4 << 20

    /// The one place the demo server starts; nil (said on stderr) when it cannot.
    static func start(rate: Int) async -> (any DemoServer)? {
        guard let server = ServerSide.parts else { ServerSide.execServer() }
        do {
            return try await server.startDemoServer(rate: rate)
        } catch {
            TextOutput.standard.err("haul: demo: cannot start the sample server: \(error)")
            return nil
        }
    }
}
