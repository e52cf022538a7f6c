import Foundation
import Testing
import TestSupport

/// `sftp://` and `scp://` against OpenSSH's sshd (`Sshd`), haul given a HOME of the test's: its key logs in,
/// its known_hosts vouches for the server's key, or does not.
@Suite(.enabled(if: Sshd.unavailable == nil, "\(Sshd.unavailable ?? "")"))
struct SFTPTests {
    @Test func sftpAndSCPDownloadsAreTheServersBytesAsCurlGetsThem() async throws {
        let dir = TempDirectory()
        let server = try await Sshd.start()
        defer { server.stop() }
        let bytes = testBytes(3 << 20 + 321, seed: 11)
        try server.serve("data.bin", bytes)
        for scheme in ["sftp", "scp"] {
            let run = try await HaulProcess.run(["--plain", "-q", "-o", scheme, server.url("data.bin", scheme: scheme)],
                                                in: dir.path, environment: server.environment)
            #expect(run.status == 0, "\(scheme): \(run)")
            #expect(dir.contents("\(scheme)/data.bin") == bytes, "\(scheme)")
            let curl = try await runProcess(["/usr/bin/curl", "-sS", "--key", server.home + "/.ssh/id_ed25519",
                                             "-u", NSUserName() + ":", "-o", dir.file("curl-\(scheme).bin"),
                                             server.url("data.bin", scheme: scheme)], environment: server.environment)
            #expect(curl.status == 0, "\(scheme): \(curl.output)")
            #expect(dir.contents("curl-\(scheme).bin") == dir.contents("\(scheme)/data.bin"), "\(scheme)")
        }
    }

    /// A first run held to 256 KiB/s is interrupted once its state is on disk. Then the server's copy of the
    /// bytes the part holds is zeroed, its size and time kept: the second run's file is whole only if it asked
    /// the SFTP server for the rest alone (from the part's end on).
    @Test func anInterruptedDownloadContinuesFromItsOffset() async throws {
        let dir = TempDirectory()
        let server = try await Sshd.start()
        defer { server.stop() }
        let bytes = testBytes(16 << 20, seed: 12)
        try server.serve("data.bin", bytes)
        let served = server.root + "/data.bin"
        let modified = try #require(try FileManager.default.attributesOfItem(atPath: served)[.modificationDate] as? Date)
        try await interrupt(["--plain", "--limit-rate", "256K", server.url("data.bin")], in: dir, part: "data.bin.part",
                            environment: server.environment)
        let kept = try #require(try FileManager.default.attributesOfItem(atPath: dir.file("data.bin.part"))[.size] as? Int)
        #expect(kept > 0 && kept < bytes.count)
        try server.serve("data.bin", [UInt8](repeating: 0, count: kept) + bytes[kept...])
        try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: served)
        let second = try await HaulProcess.run(["--plain", "-q", server.url("data.bin")], in: dir.path,
                                               environment: server.environment)
        #expect(second.status == 0, "\(second)")
        #expect(dir.contents("data.bin") == bytes)
    }

    @Test func fourConnectionsFetchOneFileInRanges() async throws {
        let dir = TempDirectory()
        let server = try await Sshd.start()
        defer { server.stop() }
        let bytes = testBytes(8 << 20 + 5, seed: 13)
        try server.serve("data.bin", bytes)
        let run = try await HaulProcess.run(["--plain", "-s", "4", server.url("data.bin")], in: dir.path,
                                            environment: server.environment)
        #expect(run.status == 0, "\(run)")
        #expect(dir.contents("data.bin") == bytes)
        #expect(run.stdout.contains("data.bin: fetching over 4 connections"), "\(run)")
    }

    /// A key known_hosts does not hold is refused with its fingerprint; `--ssh-host-key` with that fingerprint
    /// accepts it, with another refuses it; a key other than the one known_hosts holds is refused as changed.
    @Test func theHostKeyIsCheckedAndOnlyTheNamedOneAccepted() async throws {
        let dir = TempDirectory()
        let server = try await Sshd.start()
        defer { server.stop() }
        let bytes = testBytes(100_000, seed: 14)
        try server.serve("data.bin", bytes)
        let url = server.url("data.bin")
        func haul(_ arguments: [String]) async throws -> HaulProcess.Exit {
            try await HaulProcess.run(["--plain", "-q", "--retries", "0"] + arguments, in: dir.path,
                                      environment: server.environment)
        }
        server.trust()
        let unknown = try await haul(["-o", "unknown", url])
        #expect(unknown.status == 5, "\(unknown)")
        #expect(unknown.stderr.split(separator: "\n").count == 1, "\(unknown)")
        #expect(unknown.stderr.contains("is not in ~/.ssh/known_hosts; \(server.fingerprint) — add it, or pass --ssh-host-key \(server.fingerprint)"),
                "\(unknown)")
        #expect(dir.contents("unknown/data.bin") == nil)

        let pinned = try await haul(["--ssh-host-key", server.fingerprint, "-o", "pinned", url])
        #expect(pinned.status == 0, "\(pinned)")
        #expect(dir.contents("pinned/data.bin") == bytes)
        // Nothing was added to known_hosts.
        #expect(try String(contentsOfFile: server.home + "/.ssh/known_hosts", encoding: .utf8).isEmpty)

        let other = "SHA256:" + String(repeating: "A", count: 43)
        let wrong = try await haul(["--ssh-host-key", other, "-o", "wrong", url])
        #expect(wrong.status == 5, "\(wrong)")
        #expect(wrong.stderr.contains("is not the \(other) that --ssh-host-key names"), "\(wrong)")
        #expect(dir.contents("wrong/data.bin") == nil)

        let otherKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIELRDPFs6q9g1f1TlvJMqQmzolXKNM92zZ+bN1QzVO0k"
        server.trust("[127.0.0.1]:\(server.port) \(otherKey)")
        let changed = try await haul(["-o", "changed", url])
        #expect(changed.status == 5, "\(changed)")
        #expect(changed.stderr.split(separator: "\n").count == 1, "\(changed)")
        #expect(changed.stderr.contains("has changed: it is now \(server.fingerprint)"), "\(changed)")
        #expect(dir.contents("changed/data.bin") == nil)

        let malformed = try await haul(["--ssh-host-key", "AAAA", url])
        #expect(malformed.status == 2, "\(malformed)")
    }

    @Test func aMissingFileIsExitEightAndARefusedLoginExitSix() async throws {
        let dir = TempDirectory()
        let server = try await Sshd.start()
        defer { server.stop() }
        let missing = try await HaulProcess.run(["--plain", "-q", server.url("nope.bin")], in: dir.path,
                                                environment: server.environment)
        #expect(missing.status == 8, "\(missing)")
        #expect(missing.stderr.split(separator: "\n").count == 1, "\(missing)")
        // A HOME with the right known_hosts but no key this server authorizes.
        let stranger = TempDirectory()
        try FileManager.default.createDirectory(atPath: stranger.file(".ssh"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: server.home + "/.ssh/known_hosts", toPath: stranger.file(".ssh/known_hosts"))
        try server.serve("data.bin", testBytes(1000))
        let login = try await HaulProcess.run(["--plain", "-q", server.url("data.bin")], in: dir.path,
                                              environment: ["HOME": stranger.path, "SSH_AUTH_SOCK": ""])
        #expect(login.status == 6, "\(login)")
        #expect(login.stderr.split(separator: "\n").count == 1, "\(login)")
    }
}
