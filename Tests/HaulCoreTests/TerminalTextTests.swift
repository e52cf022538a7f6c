import Foundation
import TestSupport
import Testing
@testable import HaulCore

/// What reaches a terminal from outside is escaped at the sink.
@Suite struct TerminalTextTests {
    @Test func everyLineWrittenHasItsControlCharactersEscaped() {
        let captured = CapturedOutput()
        let output = captured.text
        output.err("haul: x: bad (http://h/\u{1b}]0;pwned\u{07}\u{0}\u{7f}\u{9b}2J)")
        output.out("a\u{202E}b\u{200E}\u{200F}\u{202A}\u{2066}\u{2069}\u{61C}c\td\r\ne")
        #expect(captured.err == ["haul: x: bad (http://h/\\x1b]0;pwned\\x07\\x00\\x7f\\x9b2J)"])
        #expect(captured.out == ["a\\u{202E}b\\u{200E}\\u{200F}\\u{202A}\\u{2066}\\u{2069}\\u{61C}c d\\x0d\\x0ae"])
    }

    @Test func ordinaryTextOfEveryScriptIsLeftAlone() {
        let captured = CapturedOutput()
        let text = "fotó 写真 שלום مرحبا 🎉 👩‍💻 naïve: 100% done, 2.0 MiB/s"
        captured.text.out(text)
        #expect(captured.out == [text])
    }

    @Test func jsonLinesEscapeC1AndBidiCharactersAsJSON() {
        #expect(JSONLine.quote("a\u{9b}b\u{202E}c\u{1F600}") == #""a\u009bb\u202ec😀""#)
        let captured = CapturedOutput()
        JSONReporter(output: captured.text).report(
            .fact(id: 1, url: "http://h/\u{202E}x", file: "x", .previewSaved(path: "m\u{1b}")))
        #expect(captured.out == [#"{"event":"notice","id":1,"url":"http://h/\u202ex","file":"x","kind":"preview-saved","#
                                 + #""message":"partial preview saved: m\u001b","fact":{"previewSaved":{"path":"m\u001b"}}}"#])
    }
}
