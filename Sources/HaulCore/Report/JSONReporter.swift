import FoundationEssentials
import Glibc

/// One JSON object per event per line on stdout (`--json`); failures also get their stderr line.
///
/// Field names are stable (docs/usage.md): `event`, `id`, `url`, `file`, `path`, `state`, `bytes`, `total`,
/// `rate`, `seconds`, `error`, `category`, `exit`, `message`, `completed`, `failed`.
package struct JSONReporter: Reporter {
    private let output: TextOutput

    package init(output: TextOutput = .standard) {
        self.output = output
    }

    package func report(_ event: ReportEvent) {
        var line: JSONLine
        switch event {
        case .started(let id, let url, let file, let path, let total):
            line = JSONLine().add("event", "started").add("id", id).add("url", url).add("file", file).add("path", path)
                .add("state", "downloading").add("bytes", 0).add("total", total)
        case .progress(let id, let url, let file, let progress):
            line = JSONLine().add("event", "progress").add("id", id).add("url", url).add("file", file).add("state", "downloading")
                .add("bytes", progress.completed).add("total", progress.total)
                .add("rate", Int64(progress.bytesPerSecond.rounded()))
        case .fact(let id, let url, let file, let fact):
            line = JSONLine().add("event", "notice").add("id", id).add("url", url).add("file", file)
                .add("kind", fact.kind).add("message", fact.sentence).adding("fact", Self.json(fact))
        case .done(let id, let url, let result, let seconds):
            line = JSONLine().add("event", "done").add("id", id).add("url", url).add("file", result.file).add("path", result.path)
                .add("state", result.notModified ? "not-modified" : (result.skipped ? "skipped" : "done")).add("bytes", result.bytes)
                .add("seconds", seconds)
        case .failed(let id, let url, let file, let error):
            output.err(failureLine(file: file, url: url, error: error))
            line = JSONLine().add("event", "failed").add("id", id).add("url", url).add("file", file)
                .add("state", error.category == .cancelled ? "cancelled" : "failed")
                .add("error", error.message).add("category", error.category.rawValue)
            if let reason = error.reason { line = line.add("reason", reason.rawValue) }
            line = line.add("exit", Int64(error.category.exitCode))
        case .summary(let summary):
            line = JSONLine().add("event", "summary").add("completed", summary.completed).add("failed", summary.failed)
                .add("bytes", summary.bytes).add("seconds", summary.seconds).add("exit", Int64(summary.exitCode))
        }
        output.out(line.text)
    }

    /// The fact as the socket carries it (docs/protocol.md), on one line.
    static func json(_ fact: DownloadFact) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(fact) else { return "null" }
        // What `TextOutput` would escape (only ever inside strings here) as JSON escapes, as `quote` does.
        var json = ""
        for scalar in String(decoding: data, as: UTF8.self).unicodeScalars {
            if TextOutput.needsEscape(scalar) {
                let hex = String(scalar.value, radix: 16)
                json += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                json.unicodeScalars.append(scalar)
            }
        }
        return json
    }
}
