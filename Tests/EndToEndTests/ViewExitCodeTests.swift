import Foundation
import TestSupport
import Testing

/// `haul view`'s exit code comes from the failure's category, not from its words: a file that cannot be
/// opened or read is local file I/O (3); a file that is not a picture it can show is "other" (1).
@Suite struct ViewExitCodeTests {
    @Test func aFileThatCannotBeOpenedIsFileIOAndOneThatIsNoPictureIsOther() async throws {
        let dir = TempDirectory()
        try Data("GIF89a not a jpeg".utf8).write(to: URL(fileURLWithPath: dir.file("fake.jpg")))
        let cases: [(String, Int32, String)] = [
            ("missing.jpg", 3, "cannot open: No such file or directory"),
            ("fake.jpg", 1, "not a JPEG"),
            (".", 1, "not a regular file"),
        ]
        for (name, status, reason) in cases {
            let exit = try await HaulProcess.run(["view", "--pictures", "kitty", name], in: dir.path)
            #expect(exit.status == status, "\(name): \(exit.stderr)")
            #expect(exit.stderr == "haul: view: \(name): cannot preview: \(reason)\n")
        }
    }
}
