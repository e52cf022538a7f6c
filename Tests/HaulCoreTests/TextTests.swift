import Foundation
import Testing
@testable import HaulCore

/// haul's stand-ins for the Foundation string operations it no longer links (`haul` carries
/// FoundationEssentials alone) give Foundation's answers.
@Suite struct TextTests {
    static let samples: [String] = [
        "", " ", "\t", "  a b  ", "\ta\t", " \u{00A0}x\u{3000} ", "\u{2000}\u{200A}mid\u{202F}\u{205F}",
        "\u{1680}ogham", "\nline\n", " \r\n ", "a\u{2028}", "\u{200B}zero-width\u{200B}", "e\u{0301} ",
        " 写真 ", "emoji 🙂 ", "text/html; charset=utf-8", " image/JPEG ",
    ]

    @Test(arguments: samples)
    func trimmingWhitespaceIsFoundations(text: String) {
        #expect(text.trimmingWhitespace() == text.trimmingCharacters(in: .whitespaces))
        let sub = text[...]
        #expect(sub.trimmingWhitespace() == sub.trimmingCharacters(in: .whitespaces))
    }

    @Test(arguments: [
        "", "plain", "a%20b", "%41%42%43", "%e5%86%99%e7%9c%9f.jpg", "%E5%86%99", "100%", "%", "%4", "%zz",
        "%4g", "%ff", "%c3%28", "a+b", "%2F..%2F", "%00", "mixed%20and%2",
    ])
    func percentDecodedIsFoundations(text: String) {
        #expect(text.percentDecoded == text.removingPercentEncoding)
    }
}
