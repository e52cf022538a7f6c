import ArgumentParser
import Dispatch
import Foundation
import HaulCore
import SampleServer
import NIOConcurrencyHelpers

/// Parses the command line, runs the downloads with the right reporter, and exits with the SPEC's code.
@main
enum Entry {
    static func main() async {
        let command: HaulCommand
        do {
            command = try HaulCommand.parse()
        } catch {
            let code = HaulCommand.exitCode(for: error)
            if code == .success {
                print(HaulCommand.fullMessage(for: error))
                exit(0)
            }
            TextOutput.standard.err("haul: " + HaulCommand.message(for: error))
            exit(FailureCategory.usage.exitCode)
        }
        exit(await run(command))
    }

    static func run(_ command: HaulCommand) async -> Int32 {
        CurlDriver.shared.setOverallReceiveRate(command.overallRate)
        var extra: [String] = []
        if let input = command.inputFile {
            switch InputFile.urls(from: input) {
            case .success(let urls): extra = urls
            case .failure(let error):
                TextOutput.standard.err("haul: \(input): \(error.message)")
                return error.category.exitCode
            }
            if command.urls.isEmpty && extra.isEmpty {
                TextOutput.standard.err("haul: \(input): no URL in the input")
                return FailureCategory.usage.exitCode
            }
        }
        if TUILaunch.wanted(command), let code = await TUILaunch.run(command, extraURLs: extra) {
            return code
        }
        if command.server != nil && command.urls.isEmpty && extra.isEmpty && !command.demo {
            TextOutput.standard.err("haul: --server browses files in the full-screen interface: run it on a terminal, or give URLs")
            return FailureCategory.usage.exitCode
        }
        var demoServer: SampleServer?
        if command.demo {
            do {
                let server = try await Demo.start()
                demoServer = server
                extra += Demo.files.map(server.downloadURL)
                if !command.json && !command.quiet {
                    TextOutput.standard.out("Sample server on \(server.baseURL): \(server.statusLine)")
                }
            } catch {
                TextOutput.standard.err("haul: demo: cannot start the sample server: \(error)")
                return FailureCategory.other.exitCode
            }
        }
        let reporter: any Reporter = command.json
            ? JSONReporter() : PlainReporter(quiet: command.quiet)
        let interrupted = NIOLockedValueBox(false)
        let run = DownloadRun(concurrency: command.jobs, reporter: reporter,
                              interrupted: { interrupted.withLockedValue { $0 } })
        let jobs = command.downloads(extraURLs: extra)

        let signals = SignalStream(SIGINT)
        let summary = await withTaskGroup(of: RunSummary?.self) { group in
            group.addTask { await run.run(jobs) }
            group.addTask {
                for await _ in signals.stream {
                    // A second Ctrl-C leaves at once; the first stops cleanly (partial files stay resumable).
                    let again = interrupted.withLockedValue { seen in
                        defer { seen = true }
                        return seen
                    }
                    if again { _exit(130) }
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
        return summary.exitCode
    }
}

/// A signal delivered as an `AsyncStream` (the signal's default action is turned off while it lives).
/// `@unchecked`: the dispatch source is only resumed in `init` and cancelled in `stop`, both thread-safe.
final class SignalStream: @unchecked Sendable {
    let stream: AsyncStream<Void>
    private let source: any DispatchSourceSignal
    private let continuation: AsyncStream<Void>.Continuation

    init(_ signalNumber: Int32) {
        signal(signalNumber, SIG_IGN)
        (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
        source.setEventHandler { [continuation] in continuation.yield() }
        source.resume()
    }

    func stop() {
        source.cancel()
        continuation.finish()
    }
}

/// `--demo`: the sample server in this process, throttled per connection so progress is visible.
enum Demo {
    static let files = ["medium.bin", "photo-large.jpg", "small.bin"]
    static let rate = 8 << 20

    static func start() async throws -> SampleServer {
        try await SampleServer.start(SampleServerConfiguration(port: 0, rate: rate))
    }
}
