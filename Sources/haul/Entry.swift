import ArgumentParser
import Dispatch
import Foundation
import HaulCore
import Synchronization

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
        let reporter: any Reporter = command.json
            ? JSONReporter() : PlainReporter(quiet: command.quiet)
        let interrupted = Atomic<Bool>(false)
        let downloads = DownloadRun(reporter: reporter, interrupted: { interrupted.load(ordering: .relaxed) })
        let jobs = command.jobs(extraURLs: extra)
        let work = Task { await downloads.run(jobs) }

        signal(SIGINT, SIG_IGN)
        let sigint = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        sigint.setEventHandler {
            // A second Ctrl-C leaves at once; the first cancels cleanly (partial files stay resumable).
            if interrupted.exchange(true, ordering: .relaxed) { _exit(130) }
            work.cancel()
        }
        sigint.resume()
        let summary = await work.value
        sigint.cancel()
        return interrupted.load(ordering: .relaxed) ? FailureCategory.interrupted.exitCode : summary.exitCode
    }
}

/// Reads `-i FILE`: one URL per line, blank lines and `#` comments skipped, `-` for stdin.
enum InputFile {
    static func urls(from path: String) -> Result<[String], HaulError> {
        let text: String
        if path == "-" {
            let data = FileHandle.standardInput.readDataToEndOfFile()
            text = String(decoding: data, as: UTF8.self)
        } else {
            guard let data = FileManager.default.contents(atPath: path) else {
                return .failure(HaulError(.fileIO, "cannot read the input file"))
            }
            text = String(decoding: data, as: UTF8.self)
        }
        let urls = text.split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        return .success(urls)
    }
}
