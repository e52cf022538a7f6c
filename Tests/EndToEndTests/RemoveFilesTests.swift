import Foundation
import HaulCore
import SampleServer
import TestSupport
import Testing

/// Whether this machine lets the tests mount an ext4 image through a loop device (root, with loop devices).
private let canMountExt4: Bool = {
    guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/sbin/mkfs.ext4") else { return false }
    let dir = TempDirectory()
    defer { dir.remove() }
    try? FileManager.default.createDirectory(atPath: dir.file("m"), withIntermediateDirectories: true)
    let mounted = RemoveFilesTests.mountExt4(dir.file("disk.ext4"), at: dir.file("m"))
    if mounted { _ = NoSpaceTests.shell(["/usr/bin/umount", dir.file("m")]) }
    return mounted
}()

/// `haul rm --files` through the real binary and the service: what haul wrote goes, what it did not stays.
@Suite(.serialized) struct RemoveFilesTests {
    static func haul(_ arguments: [String], _ home: ServiceHome, in dir: TempDirectory) async throws -> HaulProcess.Exit {
        try await SessionTests.haul(arguments, home, in: dir)
    }

    /// A 16 MiB ext4 file system made in `image` and mounted at `directory` (through a loop device).
    static func mountExt4(_ image: String, at directory: String) -> Bool {
        guard FileManager.default.createFile(atPath: image, contents: nil),
              let handle = FileHandle(forWritingAtPath: image), (try? handle.truncate(atOffset: 16 << 20)) != nil,
              (try? handle.close()) != nil
        else { return false }
        return NoSpaceTests.shell(["/usr/sbin/mkfs.ext4", "-q", image]) == 0
            && NoSpaceTests.shell(["/usr/bin/mount", "-o", "loop", image, directory]) == 0
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// A finished file (with a hard link the user made to it) and a running download's part and state go; the
    /// hard link keeps the bytes; both rows stay, saying "removed with files".
    @Test func theFileAndARunningDownloadsPartGoAndAHardLinkKeepsTheBytes() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        try await withSampleServer(rate: 1 << 20) { server in
            let add = try await Self.haul(["add", "-o", "out", server.downloadURL("small.bin"),
                                           server.downloadURL("medium.bin")], home, in: dir)
            #expect(add.status == 0, "\(add.stderr)")
            try await SessionTests.waitFor("small done, medium under way", home) {
                $0[1]?.state == .done && ($0[2]?.completed ?? 0) > 0
            }
            try await SessionTests.waitFor("medium's state file", home) { _ in Self.exists(dir.file("out/medium.bin.part.json")) }
            #expect(link(dir.file("out/small.bin"), dir.file("kept.bin")) == 0)

            let remove = try await Self.haul(["rm", "--files", "--json", "1", "2"], home, in: dir)
            #expect(remove.status == 0, "\(remove.stderr)")
            #expect(remove.stderr.isEmpty, "\(remove.stderr)")
            let answer = try #require(try JSONSerialization.jsonObject(with: Data(remove.stdout.utf8)) as? [String: Any])
            let removed = (answer["removed"] as? [[String: Any]] ?? []).compactMap { $0["path"] as? String }
            #expect(Set(removed).isSuperset(of: [dir.file("out/small.bin"), dir.file("out/medium.bin.part"),
                                                 dir.file("out/medium.bin.part.json")]), "\(removed)")
            for name in ["small.bin", "medium.bin", "medium.bin.part", "medium.bin.part.json", "medium.bin.part.journal"] {
                #expect(!Self.exists(dir.file("out/" + name)), "\(name) is gone")
            }
            #expect(try FileDigest.hex(of: dir.file("kept.bin")) == expectedSHA256("small.bin"), "the hard link keeps it")

            let listed = try await SessionTests.list(home, in: dir)
            #expect(listed.map { $0["removedWithFiles"] as? Bool } == [true, true])
            #expect(listed.map { $0["state"] as? String } == ["done", "cancelled"])
            let table = try await Self.haul(["ls"], home, in: dir)
            #expect(table.stdoutLines.dropFirst().allSatisfy { $0.hasSuffix("(removed with files)") }, "\(table.stdout)")
            // Kept in the queue: a new service says so too.
            #expect(try await Self.haul(["service", "stop"], home, in: dir).status == 0)
            let again = try await SessionTests.list(home, in: dir)
            #expect(again.map { $0["removedWithFiles"] as? Bool } == [true, true], "\(again)")
        }
    }

    /// A file that was at the name before haul claimed it stays (haul wrote `small.1.bin` beside it), and so
    /// does a finished file the user replaced since; a symbolic link planted at a finished file's name is not
    /// followed: the link and what it names stay, said in one line each; the exit is 0.
    @Test func aFileThatWasThereAReplacedOneAndAPlantedLinkStay() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        try FileManager.default.createDirectory(atPath: dir.file("out"), withIntermediateDirectories: true)
        try "mine\n".write(toFile: dir.file("out/small.bin"), atomically: false, encoding: .utf8)
        try "victim\n".write(toFile: dir.file("victim"), atomically: false, encoding: .utf8)
        try await withSampleServer { server in
            let add = try await Self.haul(["add", "-o", "out", server.downloadURL("small.bin"),
                                           server.downloadURL("small.bin") + "#b", server.downloadURL("small.bin") + "#c"],
                                          home, in: dir)
            #expect(add.status == 0, "\(add.stderr)")
            try await SessionTests.waitFor("all done", home) { seen in (1...3).allSatisfy { seen[$0]?.state == .done } }
            let listed = try await SessionTests.list(home, in: dir)
            let files = listed.compactMap { $0["file"] as? String }
            #expect(files.count == 3 && !files.contains(dir.file("out/small.bin")), "\(files)")
            // The second: replaced by the user; the third: a link planted at its name.
            try FileManager.default.removeItem(atPath: files[1])
            try "replaced\n".write(toFile: files[1], atomically: false, encoding: .utf8)
            try FileManager.default.removeItem(atPath: files[2])
            try FileManager.default.createSymbolicLink(atPath: files[2], withDestinationPath: dir.file("victim"))

            let remove = try await Self.haul(["rm", "--files", "--all"], home, in: dir)
            #expect(remove.status == 0, "\(remove.stderr)")
            #expect(!Self.exists(files[0]), "haul's own file goes")
            #expect(try String(contentsOfFile: dir.file("out/small.bin"), encoding: .utf8) == "mine\n")
            #expect(try String(contentsOfFile: files[1], encoding: .utf8) == "replaced\n")
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: files[2])) == dir.file("victim"))
            #expect(try String(contentsOfFile: dir.file("victim"), encoding: .utf8) == "victim\n")
            let lines = remove.stderr.split(separator: "\n").map(String.init)
            #expect(lines.count == 2, "\(remove.stderr)")
            #expect(lines.contains { $0.hasPrefix("haul: rm: \(files[1]) is not the file haul wrote") }, "\(lines)")
            #expect(lines.contains { $0.hasPrefix("haul: rm: \(files[2]) is a symbolic link") }, "\(lines)")
        }
    }

    /// A finished file deleted and written again at its name with the same size: ext4 gives the freed inode
    /// number back (the lowest free one of the group), so device, inode and size all match the record. Its
    /// birth time does not: it stays. (Before, `rm --files` deleted it as haul's.) On an ext4 image of the
    /// test's own, mounted on a loop device: in the shared /tmp, the other tests running beside it take the
    /// freed numbers first.
    @Test(.enabled(if: canMountExt4, "needs to mount an ext4 image on a loop device (root)"))
    func aSameSizeFileBornAgainWithTheSameInodeStays() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        let out = dir.file("out")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        try #require(Self.mountExt4(dir.file("disk.ext4"), at: out))
        defer { if NoSpaceTests.shell(["/usr/bin/umount", out]) != 0 { _ = NoSpaceTests.shell(["/usr/bin/umount", "-l", out]) } }
        try await withSampleServer { server in
            let add = try await Self.haul(["add", "-o", "out", server.downloadURL("small.bin")], home, in: dir)
            #expect(add.status == 0, "\(add.stderr)")
            try await SessionTests.waitFor("done", home) { $0[1]?.state == .done }
            let file = dir.file("out/small.bin")
            let before = try FileManager.default.attributesOfItem(atPath: file)
            let size = try #require(before[.size] as? Int)
            try FileManager.default.removeItem(atPath: file)
            // Files are made at the name until one gets the inode number back (haul's state files, deleted
            // since, may have lower numbers); the others move aside.
            var made = 0
            while true {
                try String(repeating: "U", count: size).write(toFile: file, atomically: false, encoding: .utf8)
                let after = try FileManager.default.attributesOfItem(atPath: file)
                if after[.systemFileNumber] as? Int == before[.systemFileNumber] as? Int { break }
                made += 1
                try #require(made < 100, "the file system never gave the inode number back")
                try FileManager.default.moveItem(atPath: file, toPath: dir.file("out/other-\(made)"))
            }

            let remove = try await Self.haul(["rm", "--files", "1"], home, in: dir)
            #expect(remove.status == 0, "\(remove.stderr)")
            #expect(FileManager.default.contents(atPath: file) == Data(repeating: UInt8(ascii: "U"), count: size))
            #expect(remove.stderr.hasPrefix("haul: rm: \(file) is not the file haul wrote"), "\(remove.stderr)")
        }
    }

    /// An unknown id: exit 2, one line, nothing deleted.
    @Test func anUnknownIdIsAUsageErrorAndNothingGoes() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        try await withSampleServer { server in
            #expect(try await Self.haul(["add", "-o", "out", server.downloadURL("small.bin")], home, in: dir).status == 0)
            try await SessionTests.waitFor("done", home) { $0[1]?.state == .done }
            let remove = try await Self.haul(["rm", "--files", "1", "7"], home, in: dir)
            #expect(remove.status == 2 && remove.stderr == "haul: rm: no download with id 7\n", "\(remove.stderr)")
            #expect(Self.exists(dir.file("out/small.bin")))
        }
    }
}

/// The screen's `D`, in tmux: a box names the files, their count and size, and asks; `n` keeps them, `y`
/// deletes them, and the row says "removed with files".
@Suite(.serialized) struct RemoveFilesKeyTests {
    @Test func capitalDNamesTheFilesAsksAndDeletesThem() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let tmux = try TmuxSession(["-o", "out", server.downloadURL("small.bin")], in: dir.path)
            try await tmux.waitFor("small.bin done") { TUITests.row($0, "small.bin")?.hasSuffix(" done") == true }
            try tmux.send("D")
            // The whole box: a screen caught while the terminal draws it has its top line only (a TSan run).
            let box = try await tmux.waitFor("the question") { screen in
                screen.contains { $0.contains("Delete the files of small.bin?") } && screen.contains { $0.contains("Delete this file") }
            }
            #expect(box.contains { $0.contains("Delete this file (1.00 MiB)?") }, "\(box)")
            #expect(box.contains { $0.contains("  small.bin") }, "\(box)")
            try tmux.send("n")
            try await tmux.waitFor("the box closed") { !$0.contains { $0.contains("Delete the files of") } }
            #expect(FileManager.default.fileExists(atPath: dir.file("out/small.bin")), "n keeps the file")

            try tmux.send("D")
            try await tmux.waitFor("the question again") { $0.contains { $0.contains("Delete the files of small.bin?") } }
            try tmux.send("y")
            let after = try await tmux.waitFor("the row removed with files") {
                TUITests.row($0, "small.bin")?.hasSuffix(" removed with files") == true
            }
            #expect(after.contains { $0.contains("Deleted 1 file (1.00 MiB)") }, "\(after)")
            #expect(!FileManager.default.fileExists(atPath: dir.file("out/small.bin")))
            try tmux.send("q")
            try await TUITests.expectExit(tmux, 0)
        }
    }
}
