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
            #expect(sizeAndDigest(dir.contents("\(scheme)/data.bin")) == sizeAndDigest(bytes), "\(scheme)")
            let curl = try await runProcess(["/usr/bin/curl", "-sS", "--key", server.home + "/.ssh/id_ed25519",
                                             "-u", NSUserName() + ":", "-o", dir.file("curl-\(scheme).bin"),
                                             server.url("data.bin", scheme: scheme)], environment: server.environment)
            #expect(curl.status == 0, "\(scheme): \(curl.output)")
            #expect(sizeAndDigest(dir.contents("curl-\(scheme).bin")) == sizeAndDigest(dir.contents("\(scheme)/data.bin")),
                    "\(scheme)")
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
        // One connection (an SFTP download takes four unless told), so that the part is the file's start.
        try await interrupt(["--plain", "--max-connection-per-server", "1", "--limit-rate", "256K", server.url("data.bin")],
                            in: dir, part: "data.bin.part", environment: server.environment)
        let kept = try #require(try FileManager.default.attributesOfItem(atPath: dir.file("data.bin.part"))[.size] as? Int)
        #expect(kept > 0 && kept < bytes.count)
        try server.serve("data.bin", [UInt8](repeating: 0, count: kept) + bytes[kept...])
        try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: served)
        let second = try await HaulProcess.run(["--plain", "-q", "--max-connection-per-server", "1", server.url("data.bin")],
                                               in: dir.path, environment: server.environment)
        #expect(second.status == 0, "\(second)")
        #expect(sizeAndDigest(dir.contents("data.bin")) == sizeAndDigest(bytes))
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
        #expect(sizeAndDigest(dir.contents("data.bin")) == sizeAndDigest(bytes))
        #expect(run.stdout.contains("data.bin: fetching over 4 connections"), "\(run)")
    }

    /// A plain `sftp://` download of a file over 1 MiB takes four connections, as `-s 4` would (one SSH
    /// connection is held to one cipher stream and what libssh2 asks for ahead); `--max-connection-per-server 1`
    /// keeps it to one.
    @Test func aPlainDownloadTakesFourConnectionsAndOneWhenTold() async throws {
        let dir = TempDirectory()
        let server = try await Sshd.start()
        defer { server.stop() }
        let bytes = testBytes(6 << 20 + 17, seed: 15)
        try server.serve("data.bin", bytes)
        let four = try await HaulProcess.run(["--plain", "-o", "four", server.url("data.bin")], in: dir.path,
                                             environment: server.environment)
        #expect(four.status == 0, "\(four)")
        #expect(sizeAndDigest(dir.contents("four/data.bin")) == sizeAndDigest(bytes))
        #expect(four.stdout.contains("data.bin: fetching over 4 connections"), "\(four)")
        // Each connection is a login of its own.
        try await server.waitForLogins(4)

        let one = try await HaulProcess.run(["--plain", "--max-connection-per-server", "1", "-o", "one",
                                             server.url("data.bin")], in: dir.path, environment: server.environment)
        #expect(one.status == 0, "\(one)")
        #expect(sizeAndDigest(dir.contents("one/data.bin")) == sizeAndDigest(bytes))
        #expect(!one.stdout.contains("fetching over"), "\(one)")
    }

    /// Each refusal is a typed reason beside its words: `--json`'s failed event says which.
    @Test func eachRefusalHasItsReason() async throws {
        let dir = TempDirectory()
        let server = try await Sshd.start()
        defer { server.stop() }
        try server.serve("data.bin", testBytes(100_000, seed: 16))
        func reason(_ arguments: [String], environment: [String: String]? = nil) async throws -> (Int32, String?) {
            let run = try await HaulProcess.run(["--json", "--retries", "0"] + arguments, in: dir.path,
                                                environment: environment ?? server.environment)
            let failed = run.stdout.split(separator: "\n").compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
            }.first { $0["event"] as? String == "failed" }
            return (run.status, failed?["reason"] as? String)
        }
        #expect(try await reason(["-o", "missing", server.url("nope.bin")]) == (8, "file-not-found"))
        let stranger = TempDirectory()
        try FileManager.default.createDirectory(atPath: stranger.file(".ssh"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: server.home + "/.ssh/known_hosts", toPath: stranger.file(".ssh/known_hosts"))
        #expect(try await reason(["-o", "login", server.url("data.bin")],
                                 environment: ["HOME": stranger.path, "SSH_AUTH_SOCK": ""]) == (6, "login-refused"))
        let other = "SHA256:" + String(repeating: "A", count: 43)
        #expect(try await reason(["--ssh-host-key", other, "-o", "pinned", server.url("data.bin")]) == (5, "host-key-mismatch"))
        server.trust()
        #expect(try await reason(["-o", "unknown", server.url("data.bin")]) == (5, "host-key-unknown"))
        let otherKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIELRDPFs6q9g1f1TlvJMqQmzolXKNM92zZ+bN1QzVO0k"
        server.trust("[127.0.0.1]:\(server.port) \(otherKey)")
        #expect(try await reason(["-o", "changed", server.url("data.bin")]) == (5, "host-key-changed"))
        // Nothing was written: an output directory made for a download is left empty.
        #expect(dir.listing().allSatisfy { (try? FileManager.default.contentsOfDirectory(atPath: dir.file($0)))?.isEmpty == true },
                "\(dir.listing())")
    }

    /// The same through the service: `haul ls --json` gives the reason, the aria2 face the code aria2 gives
    /// (3 a missing file, 24 a refused login).
    @Test func theServiceAndItsAria2FaceSayWhy() async throws {
        let server = try await Sshd.start()
        defer { server.stop() }
        let rpc = try await RPCService.start(environment: server.environment)
        let missing = try #require(try await rpc.call("aria2.addUri", [[server.url("nope.bin")]]).result as? String)
        let login = try #require(try await rpc.call("aria2.addUri", [["sftp://nosuchuser@127.0.0.1:\(server.port)\(server.root)/x.bin"]])
            .result as? String)
        for (gid, code) in [(missing, "3"), (login, "24")] {
            let status = try await RPCAbuseTests.poll("\(gid) to fail", within: 60) { () async throws -> [String: Any]? in
                let status = try await rpc.call("aria2.tellStatus", [gid]).result as? [String: Any]
                return status?["status"] as? String == "error" ? status : nil
            }
            #expect(status["errorCode"] as? String == code, "\(status)")
        }
        let ls = try await rpc.haul(["ls", "--json"])
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(ls.stdout.utf8)) as? [[String: Any]])
        #expect(listed.map { $0["reason"] as? String } == ["file-not-found", "login-refused"], "\(ls.stdout)")
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
        #expect(sizeAndDigest(dir.contents("pinned/data.bin")) == sizeAndDigest(bytes))
        // Nothing was added to known_hosts.
        #expect(try String(contentsOfFile: server.home + "/.ssh/known_hosts", encoding: .utf8).isEmpty)
        // The config file's `ssh-host-key` does the same; a malformed one is a usage error naming its line.
        let config = TempDirectory()
        try FileManager.default.createDirectory(atPath: config.file("haul"), withIntermediateDirectories: true)
        func configure(_ text: String) throws {
            try Data(text.utf8).write(to: URL(fileURLWithPath: config.file("haul/config.toml")))
        }
        try configure("ssh-host-key = \"\(server.fingerprint)\"\n")
        let configured = try await HaulProcess.run(["--plain", "-q", "-o", "configured", url], in: dir.path,
                                                   environment: server.environment.merging(["XDG_CONFIG_HOME": config.path]) { $1 })
        #expect(configured.status == 0, "\(configured)")
        #expect(sizeAndDigest(dir.contents("configured/data.bin")) == sizeAndDigest(bytes))
        try configure("# pinned\nssh-host-key = \"AAAA\"\n")
        let misconfigured = try await HaulProcess.run(["--plain", "-q", url], in: dir.path,
                                                      environment: server.environment.merging(["XDG_CONFIG_HOME": config.path]) { $1 })
        #expect(misconfigured.status == 2, "\(misconfigured)")
        #expect(misconfigured.stderr.contains("config.toml:2: ssh-host-key:"), "\(misconfigured)")

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
