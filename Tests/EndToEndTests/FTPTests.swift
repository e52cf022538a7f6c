import Foundation
import Testing
import TestSupport

/// `ftp://` and `ftps://` against vsftpd from Debian (`Vsftpd`): the bytes, resume with REST, a file that
/// changed, `-s 4`, and the exit codes of a missing file and a refused login.
@Suite(.enabled(if: Vsftpd.unavailable == nil, "\(Vsftpd.unavailable ?? "")"))
struct FTPTests {
    @Test func ftpAndFTPSDownloadsAreTheServersBytesAsCurlGetsThem() async throws {
        let dir = TempDirectory()
        let bytes = testBytes(3 << 20 + 123)
        let server = try Vsftpd()
        defer { server.stop() }
        try server.serve("data.bin", bytes)
        let plain = try await HaulProcess.run(["--plain", "-q", "-o", "ftp", server.url("data.bin")], in: dir.path)
        #expect(plain.status == 0, "\(plain)")
        #expect(sizeAndDigest(dir.contents("ftp/data.bin")) == sizeAndDigest(bytes))
        let curl = try await runProcess(["/usr/bin/curl", "-sS", "-o", dir.file("curl.bin"), server.url("data.bin")])
        #expect(curl.status == 0, "\(curl.output)")
        #expect(sizeAndDigest(dir.contents("curl.bin")) == sizeAndDigest(dir.contents("ftp/data.bin")))

        let ca = try await NetworkOptionsTests.TestCA.make()
        let implicit = try Vsftpd(.implicitTLS, certificate: (ca.serverCertificate, ca.serverKey))
        defer { implicit.stop() }
        try implicit.serve("data.bin", bytes)
        let ftps = try await HaulProcess.run(["--plain", "-q", "--cacert", ca.caCertificate, "-o", "ftps",
                                              implicit.url("data.bin", scheme: "ftps")], in: dir.path)
        #expect(ftps.status == 0, "\(ftps)")
        #expect(sizeAndDigest(dir.contents("ftps/data.bin")) == sizeAndDigest(bytes))

        // A server that demands TLS of every login: `ftp://` upgrades with --ssl-reqd, and only then logs in.
        let explicit = try Vsftpd(.explicitTLS, certificate: (ca.serverCertificate, ca.serverKey))
        defer { explicit.stop() }
        try explicit.serve("data.bin", bytes)
        let refused = try await HaulProcess.run(["--plain", "-q", "--retries", "0", "-o", "clear",
                                                 explicit.url("data.bin")], in: dir.path)
        #expect(refused.status == 6, "\(refused)")
        #expect(dir.contents("clear/data.bin") == nil)
        let upgraded = try await HaulProcess.run(["--plain", "-q", "--ssl-reqd", "--cacert", ca.caCertificate, "-o", "tls",
                                                  explicit.url("data.bin")], in: dir.path)
        #expect(upgraded.status == 0, "\(upgraded)")
        #expect(sizeAndDigest(dir.contents("tls/data.bin")) == sizeAndDigest(bytes))
        #expect(explicit.commands.contains { $0.hasPrefix("AUTH ") } && explicit.commands.contains("PROT P"),
                "\(explicit.commands)")
        // The same from the config file's keys.
        let config = TempDirectory()
        try FileManager.default.createDirectory(atPath: config.file("haul"), withIntermediateDirectories: true)
        try Data("ssl-reqd = true\ncacert = \"\(ca.caCertificate)\"\n".utf8)
            .write(to: URL(fileURLWithPath: config.file("haul/config.toml")))
        let configured = try await HaulProcess.run(["--plain", "-q", "-o", "configured", explicit.url("data.bin")],
                                                   in: dir.path, environment: ["XDG_CONFIG_HOME": config.path])
        #expect(configured.status == 0, "\(configured)")
        #expect(sizeAndDigest(dir.contents("configured/data.bin")) == sizeAndDigest(bytes))
    }

    /// A first run held to 256 KiB/s (a minute for 16 MiB: a loaded machine interrupts it long before) is
    /// interrupted once its state is on disk; the second continues from there
    /// with REST, and the file is whole.
    @Test func anInterruptedDownloadContinuesWithREST() async throws {
        let dir = TempDirectory()
        let bytes = testBytes(16 << 20, seed: 2)
        let server = try Vsftpd()
        defer { server.stop() }
        try server.serve("data.bin", bytes)
        try await interrupt(["--plain", "--limit-rate", "256K", server.url("data.bin")], in: dir, part: "data.bin.part")
        let second = try await HaulProcess.run(["--plain", "-q", server.url("data.bin")], in: dir.path)
        #expect(second.status == 0, "\(second)")
        #expect(sizeAndDigest(dir.contents("data.bin")) == sizeAndDigest(bytes))
        let offsets = server.commands.compactMap { $0.hasPrefix("REST ") ? Int($0.dropFirst(5)) : nil }
        #expect(offsets.contains { $0 > 0 }, "\(server.commands)")
    }

    /// The file on the server changes (the same size, another modification time and other bytes) between a
    /// first run and the next: the part's bytes are not mixed with the new file's.
    @Test func aFileChangedOnTheServerStartsOver() async throws {
        let dir = TempDirectory()
        let server = try Vsftpd()
        defer { server.stop() }
        try server.serve("data.bin", testBytes(16 << 20, seed: 3))
        try await interrupt(["--plain", "--limit-rate", "256K", server.url("data.bin")], in: dir, part: "data.bin.part")
        let changed = testBytes(16 << 20, seed: 4)
        try server.serve("data.bin", changed)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -86_400)],
                                              ofItemAtPath: server.root + "/data.bin")
        let second = try await HaulProcess.run(["--plain", server.url("data.bin")], in: dir.path)
        #expect(second.status == 0, "\(second)")
        #expect((second.stdout + second.stderr).contains("the file changed on the server"), "\(second)")
        #expect(sizeAndDigest(dir.contents("data.bin")) == sizeAndDigest(changed))
    }

    @Test func fourConnectionsFetchOneFileInRanges() async throws {
        let dir = TempDirectory()
        let bytes = testBytes(8 << 20 + 7, seed: 5)
        let server = try Vsftpd()
        defer { server.stop() }
        try server.serve("data.bin", bytes)
        let run = try await HaulProcess.run(["--plain", "-q", "-s", "4", server.url("data.bin")], in: dir.path)
        #expect(run.status == 0, "\(run)")
        #expect(sizeAndDigest(dir.contents("data.bin")) == sizeAndDigest(bytes))
        #expect(server.commands.filter { $0 == "RETR data.bin" }.count >= 2, "\(server.commands)")
    }

    @Test func aMissingFileIsExitEightAndARefusedLoginExitSix() async throws {
        let dir = TempDirectory()
        let server = try Vsftpd()
        defer { server.stop() }
        let missing = try await HaulProcess.run(["--plain", "-q", server.url("nope.bin")], in: dir.path)
        #expect(missing.status == 8, "\(missing)")
        #expect(missing.stderr.split(separator: "\n").count == 1, "\(missing)")
        // This server takes anonymous logins only: a named user gets 530.
        try server.serve("data.bin", testBytes(1000))
        let login = try await HaulProcess.run(["--plain", "-q", server.url("data.bin", login: "ann:s3cret-pw@")],
                                              in: dir.path)
        #expect(login.status == 6, "\(login)")
        #expect(login.stderr.split(separator: "\n").count == 1, "\(login)")
        #expect(login.stderr.contains("ann:***@"), "\(login)")
        #expect(!(login.stdout + login.stderr).contains("s3cret"), "\(login)")
        #expect(try TestFiles.containing("s3cret", under: dir.path).isEmpty)
        // `--json` says which, as data.
        for (url, reason) in [(server.url("nope.bin"), "file-not-found"), (server.url("data.bin", login: "ann:pw@"), "login-refused")] {
            let run = try await HaulProcess.run(["--json", "--retries", "0", url], in: dir.path)
            #expect(run.stdout.contains(#""reason":"\#(reason)""#), "\(run)")
        }
    }
}

/// Runs haul with `arguments` until its state file is on disk, then interrupts it: `part` and its state stay.
func interrupt(_ arguments: [String], in dir: TempDirectory, part: String,
               environment: [String: String] = [:]) async throws {
    let process = try HaulProcess(arguments, in: dir.path, environment: environment)
    try await waitForFiles(in: dir.path, "\(part).json", within: .seconds(60)) {
        FileManager.default.fileExists(atPath: dir.file(part + ".json"))
    }
    process.send(SIGINT)
    let first = await process.wait()
    #expect(first.status == 130, "\(first)")
    #expect(FileManager.default.fileExists(atPath: dir.file(part)))
}
