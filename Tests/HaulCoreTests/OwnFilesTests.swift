import Foundation
import Glibc
@testable import HaulCore
import Testing
import TestSupport

/// `OwnFiles`: what `rm --files` deletes, on files planted in a temporary folder.
@Suite struct OwnFilesTests {
    static func identity(_ path: String) -> String? { FileIdentity.of(path) }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// A paused download's part, its state, journal, a state temporary and its preview go; a file at the
    /// finished name that is not the part (there before) stays, said so.
    @Test func aPartWithItsStateJournalAndPreviewGoesAndAFileAtTheNameStays() throws {
        let dir = TempDirectory()
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + Array(repeating: 7, count: 100_000)
        try Data(jpeg).write(to: URL(fileURLWithPath: dir.file("photo.jpg.part")))
        try Data("{}".utf8).write(to: URL(fileURLWithPath: dir.file("photo.jpg.part.json")))
        try Data("{}".utf8).write(to: URL(fileURLWithPath: dir.file("photo.jpg.part.json.1a2b.tmp")))
        try Data([1, 2]).write(to: URL(fileURLWithPath: dir.file("photo.jpg.part.journal")))
        try Data(jpeg.prefix(70_000) + [0xFF, 0xD9]).write(to: URL(fileURLWithPath: dir.file("photo.partial.jpg")))
        try Data("mine".utf8).write(to: URL(fileURLWithPath: dir.file("photo.jpg")))
        let part = try #require(Self.identity(dir.file("photo.jpg.part")))

        let outcome = OwnFiles.remove(OwnFiles.Known(path: dir.file("photo.jpg"), part: part))
        for name in ["photo.jpg.part", "photo.jpg.part.json", "photo.jpg.part.json.1a2b.tmp", "photo.jpg.part.journal",
                     "photo.partial.jpg"] {
            #expect(!Self.exists(dir.file(name)), "\(name) is gone")
        }
        #expect(outcome.removed.count == 5 && outcome.failed.isEmpty)
        #expect(try String(contentsOfFile: dir.file("photo.jpg"), encoding: .utf8) == "mine")
        #expect(outcome.left.map(\.path) == [dir.file("photo.jpg")])
    }

    /// A link planted at the state's name and a picture at the preview's name that is not this file's prefix
    /// stay; so does what the link names.
    @Test func aLinkAtTheStateAndAnotherPictureAtThePreviewsNameStay() throws {
        let dir = TempDirectory()
        try FileManager.default.createDirectory(atPath: dir.file("out"), withIntermediateDirectories: true)
        try Data(Array(repeating: 9, count: 5000)).write(to: URL(fileURLWithPath: dir.file("out/a.jpg")))
        try Data("victim".utf8).write(to: URL(fileURLWithPath: dir.file("victim")))
        try FileManager.default.createSymbolicLink(atPath: dir.file("out/a.jpg.part.json"), withDestinationPath: dir.file("victim"))
        try Data(Array(repeating: 8, count: 100)).write(to: URL(fileURLWithPath: dir.file("out/a.partial.jpg")))
        let file = try #require(Self.identity(dir.file("out/a.jpg")))

        let outcome = OwnFiles.remove(OwnFiles.Known(path: dir.file("out/a.jpg"), part: file))
        #expect(!Self.exists(dir.file("out/a.jpg")))
        #expect(Self.exists(dir.file("out/a.jpg.part.json")) && Self.exists(dir.file("out/a.partial.jpg")))
        #expect(try String(contentsOfFile: dir.file("victim"), encoding: .utf8) == "victim")
        #expect(outcome.left.map(\.path) == [dir.file("out/a.jpg.part.json")])
        #expect(outcome.left.first?.reason.contains("symbolic link") == true)
    }

    /// A hard link made to the finished file: haul's name goes, the other keeps the bytes. Without a known
    /// identity (a row from an older queue) nothing goes.
    @Test func aHardLinkKeepsTheBytesAndAnUnknownIdentityDeletesNothing() throws {
        let dir = TempDirectory()
        try Data("bytes".utf8).write(to: URL(fileURLWithPath: dir.file("f.bin")))
        #expect(link(dir.file("f.bin"), dir.file("other")) == 0)
        let unknown = OwnFiles.remove(OwnFiles.Known(path: dir.file("f.bin"), part: nil))
        #expect(unknown.removed.isEmpty && unknown.left.count == 1 && Self.exists(dir.file("f.bin")))

        let outcome = OwnFiles.remove(OwnFiles.Known(path: dir.file("f.bin"), part: Self.identity(dir.file("f.bin"))))
        #expect(outcome.removed.map(\.path) == [dir.file("f.bin")] && !Self.exists(dir.file("f.bin")))
        #expect(try String(contentsOfFile: dir.file("other"), encoding: .utf8) == "bytes")
    }
}
