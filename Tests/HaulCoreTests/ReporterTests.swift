import NIOConcurrencyHelpers
import TestSupport
import Testing
@testable import HaulCore

/// Captures what a reporter prints.
final class CapturedOutput: Sendable {
    private let lines = NIOLockedValueBox<(out: [String], err: [String])>(([], []))
    var out: [String] { lines.withLockedValue { $0.out } }
    var err: [String] { lines.withLockedValue { $0.err } }
    var text: TextOutput {
        TextOutput(out: { line in self.lines.withLockedValue { $0.out.append(line) } },
                   err: { line in self.lines.withLockedValue { $0.err.append(line) } })
    }
}

/// Seconds that a test sets by hand.
final class FakeSeconds: Sendable {
    private let value = NIOLockedValueBox(0.0)
    func set(_ seconds: Double) { value.withLockedValue { $0 = seconds } }
    var now: @Sendable () -> Double { { self.value.withLockedValue { $0 } } }
}

@Suite struct ReporterTests {
    let url = "http://h/files/download?a.bin"

    func progress(_ done: Int64) -> DownloadProgress {
        DownloadProgress(completed: done, batchBytes: 1, total: 10 << 20, bytesPerSecond: 1_048_576)
    }

    @Test func plainProgressIsRateLimitedPerDownload() {
        let captured = CapturedOutput()
        let seconds = FakeSeconds()
        let reporter = PlainReporter(output: captured.text, interval: 1, now: seconds.now)
        reporter.report(.started(id: 1, url: url, file: "a.bin", path: "out/a.bin", total: 10 << 20))
        seconds.set(0.5)
        reporter.report(.progress(id: 1, url: url, file: "a.bin", progress(1 << 20)))
        seconds.set(1.2)
        reporter.report(.progress(id: 1, url: url, file: "a.bin", progress(2 << 20)))
        seconds.set(1.5)
        reporter.report(.progress(id: 1, url: url, file: "a.bin", progress(3 << 20)))
        #expect(captured.out == [
            "a.bin: saving to out/a.bin (10.0 MiB)",
            "a.bin  20%  2.00 MiB / 10.0 MiB  1.00 MiB/s  ETA 0:08",
        ])
    }

    @Test func failuresGoToStderrInTheSpecFormatEvenWhenQuiet() {
        let captured = CapturedOutput()
        let reporter = PlainReporter(output: captured.text, quiet: true)
        reporter.report(.started(id: 1, url: url, file: "a.bin", path: "a.bin", total: nil))
        reporter.report(.failed(id: 1, url: url, file: "a.bin", error: HaulError(.server, "server answered 404 Not Found")))
        #expect(captured.out.isEmpty)
        #expect(captured.err == ["haul: a.bin: server answered 404 Not Found (http://h/files/download?a.bin)"])
    }

    @Test func noticesAreInformationOnStdoutNotFailures() {
        let captured = CapturedOutput()
        PlainReporter(output: captured.text).report(
            .fact(id: 1, url: url, file: "a.bin", .retrying(attempt: 1, of: 5, delaySeconds: 1, resumeAt: 0,
                                                            reason: HaulError(.server, "server answered 503 Service Unavailable"))))
        #expect(captured.out == ["a.bin: server answered 503 Service Unavailable; retry 1 of 5 in 1.0 s"])
        #expect(captured.err.isEmpty)
        let quiet = CapturedOutput()
        PlainReporter(output: quiet.text, quiet: true).report(.fact(id: 1, url: url, file: "a.bin", .previewSaved(path: "x")))
        #expect(quiet.out.isEmpty && quiet.err.isEmpty)
    }

    @Test func summaryCountsFailures() {
        let captured = CapturedOutput()
        var summary = RunSummary()
        summary.completed = 2
        summary.failed = 1
        summary.bytes = 3 << 20
        summary.seconds = 1.25
        PlainReporter(output: captured.text).report(.summary(summary))
        #expect(captured.out == ["2 of 3 done, 1 failed, 3.00 MiB in 1.3 s"])
    }

    @Test func jsonEventsHaveStableFields() {
        let captured = CapturedOutput()
        let reporter = JSONReporter(output: captured.text)
        reporter.report(.progress(id: 2, url: url, file: "a\"b.bin", progress(5)))
        reporter.report(.failed(id: 2, url: url, file: "a.bin", error: HaulError(.network, "connection refused")))
        #expect(captured.out == [
            #"{"event":"progress","id":2,"url":"http://h/files/download?a.bin","file":"a\"b.bin","state":"downloading","bytes":5,"total":10485760,"rate":1048576}"#,
            #"{"event":"failed","id":2,"url":"http://h/files/download?a.bin","file":"a.bin","state":"failed","error":"connection refused","category":"network","exit":4}"#,
        ])
        #expect(captured.err == ["haul: a.bin: connection refused (http://h/files/download?a.bin)"])
    }

    @Test func jsonEscapesControlCharacters() {
        #expect(JSONLine.quote("a\u{1}\n\\") == #""a\u0001\n\\""#)
    }
}
