import ArgumentParser
import Glibc
import HaulCore
import NIOConcurrencyHelpers

extension HaulCommand {
    /// `-O -`: the one download goes to standard output, as curl's `-o -` does.
    var writesToStandardOutput: Bool { output == "-" }

    /// The config file's keys a `-O -` run leaves out (`Entry.parse`): each is refused with it on the command line.
    static let standardOutputIgnoredKeys: Set<String> = [
        "segments", "output-dir", "json", "overwrite", "skip-existing", "timestamping",
        "on-complete", "on-error", "checksum-file",
    ]

    /// What `-O -` cannot go with, refused before anything starts (exit 2): more than one download, more
    /// than one connection or source (the bytes go out in order, as they arrive), a file's options (there is
    /// no file), and the options that write to standard output themselves. `named`: the URLs named, as
    /// `validate` counts them.
    func checkStandardOutput(named: Int) throws {
        guard writesToStandardOutput else { return }
        let problem: String? =
            if named != 1 || !metalink.isEmpty { "takes a single URL (no -i, -M or numbered series)" }
            else if segments > 1 { "fetches over one connection, in order: -s \(segments) does not go with it" }
            else if !mirrors.isEmpty { "fetches from one source: --mirror does not go with it" }
            else if json { "leaves standard output to the file: --json does not go with it" }
            else if outputDirectory != nil { "writes no file: -o does not go with it" }
            else if overwrite || skipExisting || timestamping { "writes no file: --overwrite, --skip-existing and -N do not go with it" }
            else if onComplete != nil || onError != nil || checksumFile != nil {
                "writes no file for --on-complete, --on-error or --checksum-file to name"
            }
            else if demo || server != nil { "takes a URL, not --demo or --server" }
            else { nil }
        if let problem { throw ValidationError("-O - (standard output) \(problem)") }
    }
}

/// `haul -O - URL`: the download written to standard output in order (`StandardOutputDownload`), its
/// lines on standard error. A reader that goes away (`| head`) ends it quietly with exit 3, the code of a
/// local write that failed (curl's 23); Ctrl-C, SIGTERM and SIGHUP end it with their codes.
enum StandardOutputRun {
    static func run(_ command: HaulCommand) async -> Int32 {
        // A write to a pipe whose reader has gone fails with EPIPE instead of killing haul.
        signal(SIGPIPE, SIG_IGN)
        guard var job = command.downloads(extra: []).first else { return FailureCategory.usage.exitCode }
        // `-` names no file: the lines name the download as the server or the URL does.
        job.outputName = nil
        let clock = ContinuousClock()
        let lines = TextOutput(out: { TextOutput.standard.err($0) }, err: { TextOutput.standard.err($0) })
        let reporter = PlainReporter(output: lines, quiet: command.quiet, clock: MomentClock(clock))
        let download = StandardOutputDownload(job: job, clock: clock)
        let task = Task { try await download.run(to: STDOUT_FILENO, report: reporter.report) }
        let stoppedBy = NIOLockedValueBox<FailureCategory?>(nil)
        let signals = SignalStream([SIGINT, SIGTERM, SIGHUP])
        let watcher = Task {
            for await number in signals.stream {
                guard let category = FailureCategory.stopped(by: number) else { continue }
                let again = stoppedBy.withLockedValue { first in
                    defer { first = first ?? category }
                    return first != nil
                }
                // A second signal leaves at once (a write may be waiting on a reader that stopped reading).
                if again { _exit(category.exitCode) }
                task.cancel()
            }
        }
        defer {
            watcher.cancel()
            signals.stop()
        }
        do {
            _ = try await task.value
            return 0
        } catch is StandardOutputClosed {
            return FailureCategory.fileIO.exitCode
        } catch {
            let stopped = stoppedBy.withLockedValue { $0 }
            let failure = stopped.map { HaulError($0, "stopped") } ?? HaulError.from(error)
            reporter.report(.failed(id: 0, url: job.url, file: job.plannedName, error: failure))
            return failure.category.exitCode
        }
    }
}
