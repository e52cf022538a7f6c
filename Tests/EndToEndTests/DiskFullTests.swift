import Foundation
import HaulCore
import SampleServer
import TestSupport
import Testing

/// A disk that runs out: the real binary writing into a small tmpfs of its own (mounted for the test, so
/// only where the tests may mount: as root with the capability, as on this project's machines and CI).
/// The part stays resumable: the state file, which needs room of its own, is written after the part gives
/// back what it can (blocks reserved ahead, then its last megabyte). Before, one connection left a part of
/// 5 MiB with no state (the next run started over) and `-s 4` a sparse part with no state.
private let canMountTmpfs: Bool = {
    guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/mount") else { return false }
    let dir = TempDirectory()
    let mounted = DiskFullTests.shell(["/usr/bin/mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir.path]) == 0
    if mounted { _ = DiskFullTests.shell(["/usr/bin/umount", dir.path]) }
    return mounted
}()

@Suite(.enabled(if: canMountTmpfs, "needs to mount a tmpfs (root)")) struct DiskFullTests {
    static let name = "medium.bin"

    static func shell(_ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Runs haul into a 4 MiB tmpfs; returns its exit and the files it left there (copied out), then unmounts.
    func runIntoFullDisk(_ arguments: [String], server: SampleServer, dir: TempDirectory)
        async throws -> (HaulProcess.Exit, [String])
    {
        let small = dir.file("small")
        try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: true)
        #expect(Self.shell(["/usr/bin/mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", small]) == 0)
        // Lazily if it is busy (a process still closing a file there): the mount never outlives the test.
        defer { if Self.shell(["/usr/bin/umount", small]) != 0 { _ = Self.shell(["/usr/bin/umount", "-l", small]) } }
        let exit = try await HaulProcess.run(["--plain", "-q", "--retries", "0", "-o", "small"] + arguments
                                             + [server.downloadURL(Self.name)], in: dir.path)
        let left = try FileManager.default.contentsOfDirectory(atPath: small).sorted()
        try FileManager.default.createDirectory(atPath: dir.file("kept"), withIntermediateDirectories: true)
        for name in left { try FileManager.default.copyItem(atPath: small + "/" + name, toPath: dir.file("kept/" + name)) }
        return (exit, left)
    }

    @Test(arguments: [1, 4])
    func aFullDiskLeavesTheDownloadResumable(segments: Int) async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let (exit, left) = try await runIntoFullDisk(["-s", String(segments)], server: server, dir: dir)
            #expect(exit.status == FailureCategory.fileIO.exitCode, "status \(exit.status): \(exit.stderr)")
            #expect(exit.stderr.split(separator: "\n").count == 1, "\(exit.stderr)")
            if left.isEmpty { return }  // nothing came before the disk ran out: nothing to resume, no debris
            #expect(left.contains(Self.name + ".part") && left.contains(Self.name + ".part.json"), "\(left)")
            guard let data = FileManager.default.contents(atPath: dir.file("kept/\(Self.name).part.json")),
                let state = try? JSONDecoder().decode(ResumeState.self, from: data)
            else {
                Issue.record("no readable state beside the part: \(left)")
                return
            }
            let recorded = state.completed.reduce(0) { $0 + $1.count }
            #expect(recorded > 0, "the state records nothing")
            // Where there is room again, the same command fetches only the rest, and the file is right.
            server.resetStats()
            let after = try await HaulProcess.run(["--plain", "-q", "-s", String(segments), "-o", "kept",
                                                   server.downloadURL(Self.name)], in: dir.path)
            #expect(after.status == 0, "\(after.stderr)")
            #expect(try FileDigest.hex(of: dir.file("kept/" + Self.name)) == expectedSHA256(Self.name))
            #expect(server.stats.bodyBytesSent <= Int64(generatedFile(Self.name).size) - recorded + (1 << 20),
                    "fetched \(server.stats.bodyBytesSent) with \(recorded) recorded")
        }
    }
}
