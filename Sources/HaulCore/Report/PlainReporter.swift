import NIOConcurrencyHelpers

/// Line output for logs and pipes: a line when a download starts, a progress line at most once per
/// `interval` per download, notices (retries, refused resumes), a line when it ends, and a summary.
/// Failures go to stderr, one line each, even when quiet.
package final class PlainReporter: Reporter {
    private let output: TextOutput
    private let quiet: Bool
    private let interval: Double
    private let now: @Sendable () -> Double
    private let lastPrinted = NIOLockedValueBox<[Int: Double]>([:])

    /// - Parameters:
    ///   - clock: what spaces the progress lines; the process's own, given where it starts.
    package convenience init(output: TextOutput = .standard, quiet: Bool = false, interval: Double = 1,
                             clock: MomentClock = .continuous) {
        self.init(output: output, quiet: quiet, interval: interval, now: { clock.now.sinceOrigin.seconds })
    }

    /// - Parameters:
    ///   - now: seconds on a monotonic clock; injected so tests need not wait.
    init(output: TextOutput = .standard, quiet: Bool = false, interval: Double = 1,
         now: @escaping @Sendable () -> Double) {
        self.output = output
        self.quiet = quiet
        self.interval = interval
        self.now = now
    }

    package func report(_ event: ReportEvent) {
        switch event {
        case .failed(_, let url, let file, let error):
            output.err(failureLine(file: file, url: url, error: error))
            return
        default:
            break
        }
        guard !quiet else { return }
        switch event {
        case .started(let id, _, let file, let path, let total):
            lastPrinted.withLockedValue { $0[id] = now() }
            output.out("\(file): saving to \(path)" + (total.map { " (\(ByteFormat.size($0)))" } ?? ""))
        case .progress(let id, _, let file, let progress):
            let time = now()
            let due = lastPrinted.withLockedValue { printed in
                guard time - (printed[id] ?? -.infinity) >= interval else { return false }
                printed[id] = time
                return true
            }
            if due { output.out(Self.progressLine(file: file, progress)) }
        case .done(let id, _, let result, let seconds):
            lastPrinted.withLockedValue { $0[id] = nil }
            if result.notModified {
                output.out("\(result.file): not modified on the server, kept (\(result.path))")
            } else if result.skipped {
                output.out("\(result.file): exists, skipped (\(result.path))")
            } else {
                output.out("\(result.file): done, \(ByteFormat.size(result.bytes)) in \(Self.seconds(seconds))"
                           + " (\(ByteFormat.rate(Double(result.bytes) / max(seconds, 0.001))))")
            }
        case .summary(let summary):
            var line = "\(summary.completed) of \(summary.completed + summary.failed) done"
            if summary.failed > 0 { line += ", \(summary.failed) failed" }
            line += ", \(ByteFormat.size(summary.bytes)) in \(Self.seconds(summary.seconds))"
            output.out(line)
        case .fact(_, _, let file, let fact):
            // A setting, not news, in a line stream (--json carries it).
            if case .limited = fact { break }
            // Information, not failure: stderr carries exactly one line per failed download.
            output.out("\(file): \(fact.sentence)")
        case .failed:
            break
        }
    }

    /// `name  45%  4.50 MiB / 10.0 MiB  12.3 MiB/s  ETA 0:01`, or without percent and ETA when the size is unknown.
    static func progressLine(file: String, _ progress: DownloadProgress) -> String {
        let rate = ByteFormat.rate(progress.bytesPerSecond)
        guard let total = progress.total, total > 0 else {
            return "\(file)  \(ByteFormat.size(progress.completed))  \(rate)"
        }
        let percent = Int(Double(progress.completed) * 100 / Double(total))
        let eta = progress.bytesPerSecond > 0
            ? ByteFormat.duration(seconds: Double(total - progress.completed) / progress.bytesPerSecond) : "--:--"
        return "\(file)  \(percent)%  \(ByteFormat.size(progress.completed)) / \(ByteFormat.size(total))  \(rate)  ETA \(eta)"
    }

    static func seconds(_ value: Double) -> String {
        value < 60 ? "\(ByteFormat.fixed(value, 1)) s" : ByteFormat.duration(seconds: value)
    }
}
