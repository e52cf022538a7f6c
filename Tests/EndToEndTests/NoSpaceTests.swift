import Foundation
import HaulCore
import SampleServer
import TestSupport
import Testing

/// Never start what cannot fit (issue 75): a 50 MB file and a 20 MB tmpfs of the test's own (so only where
/// the tests may mount: as root with the capability, as on this project's machines and CI). Before, the plain
/// run wrote 20 MB into the part and failed with the disk full; the service's download failed the same way.
private let canMount: Bool = {
    guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/mount") else { return false }
    let dir = TempDirectory()
    let mounted = NoSpaceTests.shell(["/usr/bin/mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir.path]) == 0
    if mounted { _ = NoSpaceTests.shell(["/usr/bin/umount", dir.path]) }
    return mounted
}()

@Suite(.serialized, .enabled(if: canMount, "needs to mount a tmpfs (root)")) struct NoSpaceTests {
    static let big = GeneratedFile(name: "big.bin", size: 50_000_000)

    static func shell(_ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Runs `body` with `dir/small` a tmpfs of `size`, unmounted after.
    static func withSmallDisk<T>(_ size: String, in dir: TempDirectory, _ body: (String) async throws -> T)
        async throws -> T
    {
        let small = dir.file("small")
        try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: true)
        try #require(shell(["/usr/bin/mount", "-t", "tmpfs", "-o", "size=\(size)", "tmpfs", small]) == 0)
        // Lazily if it is busy (a process still closing a file there): the mount never outlives the test.
        defer { if shell(["/usr/bin/umount", small]) != 0 { _ = shell(["/usr/bin/umount", "-l", small]) } }
        return try await body(small)
    }

    static func server<T>(_ body: (SampleServer) async throws -> T) async throws -> T {
        var configuration = SampleServerConfiguration(port: 0)
        configuration.files = GeneratedFile.standardSet + [big]
        return try await withSampleServer(configuration, body)
    }

    @Test func aPlainRunThatCannotFitExitsThreeHavingWrittenNothing() async throws {
        let dir = TempDirectory()
        try await Self.server { server in
            try await Self.withSmallDisk("20m", in: dir) { small in
                let exit = try await HaulProcess.run(["--plain", "--retries", "0", "-o", "small",
                                                      server.downloadURL("big.bin")], in: dir.path)
                #expect(exit.status == FailureCategory.fileIO.exitCode, "status \(exit.status): \(exit.stderr)")
                let lines = exit.stderr.split(separator: "\n")
                #expect(lines.count == 1 && lines[0].hasPrefix("haul: big.bin: not enough free space: needs 47.7 MiB"),
                        "\(exit.stderr)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: small).isEmpty, "nothing written")
                // What fits still goes: the same disk takes a 1 MiB file.
                let fits = try await HaulProcess.run(["--plain", "-q", "-o", "small", server.downloadURL("small.bin")],
                                                     in: dir.path)
                #expect(fits.status == 0, "\(fits.stderr)")
            }
        }
    }

    /// The service: the download waits as "no space" with its reason (`haul ls`, `--json`), its part not made,
    /// and starts by itself once there is room and a download ends.
    @Test func theServiceWaitsForRoomAndStartsWhenThereIsSome() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        try await Self.server { server in
            try await Self.withSmallDisk("20m", in: dir) { small in
                let add = try await SessionTests.haul(["add", "-o", "small", server.downloadURL("big.bin")], home,
                                                      in: dir)
                #expect(add.status == 0, "\(add.stderr)")
                try await SessionTests.waitFor("no space", home) { $0[1]?.state.isWaitingForRoom == true }
                let listed = try await SessionTests.list(home, in: dir)
                #expect(listed.first?["state"] as? String == "no space")
                #expect((listed.first?["error"] as? String)?.hasPrefix("not enough free space: needs 47.7 MiB") == true,
                        "\(listed)")
                let table = try await SessionTests.haul(["ls"], home, in: dir)
                #expect(table.stdout.contains("no space"), "\(table.stdout)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: small).isEmpty, "nothing written")

                // Room comes (the disk grows), and a download that ends makes the queue look again.
                #expect(Self.shell(["/usr/bin/mount", "-o", "remount,size=80m", small]) == 0)
                let other = try await SessionTests.haul(["add", "-o", ".", server.downloadURL("small.bin")], home,
                                                        in: dir)
                #expect(other.status == 0, "\(other.stderr)")
                try await SessionTests.waitFor("both done", home) { $0[1]?.state == .done && $0[2]?.state == .done }
                #expect(try FileDigest.hex(of: small + "/big.bin") == expectedSHA256(of: Self.big))
                _ = try await SessionTests.haul(["service", "stop"], home, in: dir)
            }
        }
    }

    /// A download waiting for room is not running: `haul rm` forgets it, as it forgets a finished one (it was
    /// refused as "queued or running; cancel it first").
    @Test func aDownloadWaitingForRoomCanBeRemoved() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        try await Self.server { server in
            try await Self.withSmallDisk("20m", in: dir) { small in
                let add = try await SessionTests.haul(["add", "-o", "small", server.downloadURL("big.bin")], home,
                                                      in: dir)
                #expect(add.status == 0, "\(add.stderr)")
                try await SessionTests.waitFor("no space", home) { $0[1]?.state.isWaitingForRoom == true }
                let removed = try await SessionTests.haul(["rm", "1"], home, in: dir)
                #expect(removed.status == 0, "\(removed.stderr)")
                #expect(try await SessionTests.list(home, in: dir).isEmpty)
                #expect(try FileManager.default.contentsOfDirectory(atPath: small).isEmpty, "nothing written")
                _ = try await SessionTests.haul(["service", "stop"], home, in: dir)
            }
        }
    }

    /// A disk that fills while a download runs (here, another program fills it while the server holds the
    /// body): the service pauses it as "no space", its part and state kept, and continues it from there once
    /// there is room and a download ends. Before, it failed.
    @Test func aDiskThatFillsPausesTheServicesDownloadResumable() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        try await Self.server { server in
            var faults = SampleServerFaults()
            faults.holdAt = [4 << 20]
            server.setFaults(faults)
            try await Self.withSmallDisk("24m", in: dir) { small in
                let add = try await SessionTests.haul(["add", "-o", "small", server.downloadURL("medium.bin")], home,
                                                      in: dir)
                #expect(add.status == 0, "\(add.stderr)")
                await server.waitUntilHeld()
                // Bytes on disk before the disk fills, so that there is something to continue.
                try await SessionTests.waitFor("bytes written", home) { ($0[1]?.completed ?? 0) >= 2 << 20 }
                _ = Self.shell(["/bin/dd", "if=/dev/zero", "of=" + small + "/filler", "bs=1M"])
                server.release()
                try await SessionTests.waitFor("no space", home) { $0[1]?.state.isWaitingForRoom == true }
                let left = try FileManager.default.contentsOfDirectory(atPath: small)
                #expect(left.contains("medium.bin.part") && left.contains("medium.bin.part.json"), "\(left)")
                let listed = try await SessionTests.list(home, in: dir)
                #expect(listed.first?["state"] as? String == "no space")

                try FileManager.default.removeItem(atPath: small + "/filler")
                server.setFaults(SampleServerFaults())
                server.resetStats()
                let other = try await SessionTests.haul(["add", "-o", ".", server.downloadURL("small.bin")], home,
                                                        in: dir)
                #expect(other.status == 0, "\(other.stderr)")
                try await SessionTests.waitFor("both done", home) { $0[1]?.state == .done && $0[2]?.state == .done }
                #expect(try FileDigest.hex(of: small + "/medium.bin") == expectedSHA256("medium.bin"))
                // medium.bin's rest and small.bin (1 MiB): less than both whole.
                let after = try await SessionTests.list(home, in: dir)
                #expect(server.stats.bodyBytesSent < (21 << 20), "continued, not started over: \(after)")
                _ = try await SessionTests.haul(["service", "stop"], home, in: dir)
            }
        }
    }
}
