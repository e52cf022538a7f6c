import Foundation
import TestSupport
import Testing
@testable import HaulCore

@Suite struct InvisibleNameTests {
    @Test(arguments: [
        ("report\u{200F}.txt", "report.txt"),
        ("\u{200E}left\u{200E}.bin", "left.bin"),
        ("a\u{2028}b\u{2029}c.txt", "abc.txt"),
        ("soft\u{AD}hyphen.txt", "softhyphen.txt"),
        ("tag\u{E0041}\u{E007F}.txt", "tag.txt"),
        ("arabic\u{61C}mark.txt", "arabicmark.txt"),
        ("un\u{378}assigned.txt", "unassigned.txt"),
        ("\u{FEFF}bom.txt", "bom.txt"),
        ("zero\u{200B}width.txt", "zerowidth.txt"),
    ])
    func formatAndUnassignedCharactersAreDropped(input: String, expected: String) {
        #expect(FileNaming.sanitize(input) == expected)
    }

    @Test(arguments: ["фото.jpg", "写真.jpg", "שלום.txt", "مرحبا.txt", "नमस्ते.txt", "🎉party🎉.bin",
                      "👩‍💻.txt", "می‌خواهم.txt", "ü\u{308}.txt", "\u{E000}private.bin"])
    func lettersOfEveryScriptAndEmojiStay(name: String) {
        #expect(FileNaming.sanitize(name) == name)
    }
}
