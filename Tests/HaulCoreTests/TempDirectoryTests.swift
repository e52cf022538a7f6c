import Foundation
import TestSupport
import Testing

/// The test directories' removal (TestSupport), which a service still writing in one as its test ends used
/// to defeat: `FileManager.removeItem` gave up on the first entry renamed away under it and left the
/// directory in /tmp (two a CI run).
@Suite struct TempDirectoryTests {
    @Test func aTreeGoesWithoutFollowingItsLinks() throws {
        let outside = TempDirectory()
        try Data("keep".utf8).write(to: URL(fileURLWithPath: outside.file("kept")))
        let tree = TempDirectory()
        try FileManager.default.createDirectory(atPath: tree.file("a/b/c"), withIntermediateDirectories: true)
        try Data("x".utf8).write(to: URL(fileURLWithPath: tree.file("a/b/c/file")))
        try Data("y".utf8).write(to: URL(fileURLWithPath: tree.file("a/file.part.json.1234.tmp")))
        #expect(symlink(outside.path, tree.file("a/link")) == 0)
        #expect(symlink(outside.path + "/gone", tree.file("dangling")) == 0)

        #expect(TempDirectory.removeTree(tree.path) == 0)
        #expect(!FileManager.default.fileExists(atPath: tree.path))
        #expect(outside.contents("kept") == Array("keep".utf8), "a link is removed, not what it points at")
    }

    @Test func whatIsGoneAlreadyIsNoError() {
        let dir = TempDirectory()
        #expect(TempDirectory.removeTree(dir.file("never-made")) == 0)
        #expect(TempDirectory.removeTree(dir.file("never-made/below")) == 0)
    }
}
