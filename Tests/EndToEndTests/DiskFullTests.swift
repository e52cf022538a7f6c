import Foundation
import HaulCore
import SampleServer
import TestSupport
import Testing

/// A disk that runs out under a write: the real binary writing into a small tmpfs of its own (mounted for the test, so
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

    /// Runs haul into a 24 MiB tmpfs that another program fills while the download runs (the server holds
    /// the body 2 MiB in, the disk is filled, the body goes on): the file (20 MiB) fits when haul looks before
    /// its first byte, so what is tested is a disk that runs out under a write. Returns haul's exit and the
    /// files it left there (copied out), then unmounts.
    /// The disk is filled once the part's blocks (`st_blocks`, 512 bytes each) reach `blocks` bytes.
    func runIntoFullDisk(_ arguments: [String], blocks: Int64, server: SampleServer, dir: TempDirectory)
        async throws -> (HaulProcess.Exit, [String])
    {
        let small = dir.file("small")
        try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: true)
        #expect(Self.shell(["/usr/bin/mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", small]) == 0)
        // Lazily if it is busy (a process still closing a file there): the mount never outlives the test.
        defer { if Self.shell(["/usr/bin/umount", small]) != 0 { _ = Self.shell(["/usr/bin/umount", "-l", small]) } }
        var faults = SampleServerFaults()
        faults.holdAt = [2 << 20]
        server.setFaults(faults)
        async let run = HaulProcess.run(["--plain", "-q", "--retries", "0", "-o", "small"] + arguments
                                        + [server.downloadURL(Self.name)], in: dir.path)
        await server.waitUntilHeld()
        let part = small + "/" + Self.name + ".part"
        // Blocks in the part: written or reserved, which haul does only after its look at the free space (the
        // part's name is claimed before it, and a disk filled then is what the look is for).
        try await waitForFiles(in: small, "bytes in the part", within: .seconds(30)) {
            var status = stat()
            return stat(part, &status) == 0 && Int64(status.st_blocks) * 512 >= blocks
        }
        _ = Self.shell(["/bin/dd", "if=/dev/zero", "of=" + small + "/filler", "bs=1M"])
        server.setFaults(SampleServerFaults())
        server.release()
        let exit = try await run
        try FileManager.default.removeItem(atPath: small + "/filler")
        let left = try FileManager.default.contentsOfDirectory(atPath: small).sorted()
        try FileManager.default.createDirectory(atPath: dir.file("kept"), withIntermediateDirectories: true)
        for name in left { try FileManager.default.copyItem(atPath: small + "/" + name, toPath: dir.file("kept/" + name)) }
        return (exit, left)
    }

    /// `-s 4` reserves the blocks it writes into ahead of its writes (`PartFile.reserveAhead`, 32 MiB a
    /// connection, here the whole file): a disk another program fills meanwhile does not take them, and the
    /// download ends right.
    /// The bodies come at 2 MiB/s a connection, so that checkpoints (1 s in, then every 250 ms) fall after the
    /// disk is full: the state file, which needs blocks of its own, cannot be written then, which does not end
    /// the download (it did: exit 3 with the data's room reserved).
    @Test func blocksReservedAheadOutlastAFullDisk() async throws {
        let dir = TempDirectory()
        var configuration = SampleServerConfiguration(port: 0)
        configuration.rate = 2 << 20
        try await withSampleServer(configuration) { server in
            // Filled once the whole file is reserved (the first connection's first write reserves it all).
            let (exit, left) = try await runIntoFullDisk(["-s", "4"], blocks: Int64(generatedFile(Self.name).size),
                                                         server: server, dir: dir)
            #expect(exit.status == 0, "status \(exit.status): \(exit.stderr)")
            #expect(left == [Self.name])
            #expect(try FileDigest.hex(of: dir.file("kept/" + Self.name)) == expectedSHA256(Self.name))
        }
    }

    /// One connection writes where it is: the disk running out under a write ends the run (exit 3, one line)
    /// with the part and a state that records what is in it; the same command continues it.
    @Test func aFullDiskLeavesTheDownloadResumable() async throws {
        let segments = 1
        let dir = TempDirectory()
        try await withSampleServer { server in
            let (exit, left) = try await runIntoFullDisk(["-s", String(segments)], blocks: 1, server: server, dir: dir)
            #expect(exit.status == FailureCategory.fileIO.exitCode, "status \(exit.status): \(exit.stderr)")
            #expect(exit.stderr.split(separator: "\n").count == 1, "\(exit.stderr)")
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
