import CLinux
import Foundation
import HaulCore
import Testing
import TestSupport

/// The ways an SFTP login finds its key besides `~/.ssh/id_ed25519` (`SFTPTests`): an SSH agent holding it
/// (OpenSSH's `ssh-agent`, the key nowhere on disk haul reads), and a user named by `--user` or the URL. Each
/// against a HOME whose known_hosts vouches for the server and that holds no key of its own.
@Suite(.enabled(if: Sshd.unavailable == nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/ssh-agent"),
                "\(Sshd.unavailable ?? "ssh-agent is not installed (make deps installs openssh-client)")"))
struct SFTPLoginTests {
    /// A HOME with the server's known_hosts line and no key.
    static func keylessHome(for server: Sshd) throws -> TempDirectory {
        let home = TempDirectory()
        try FileManager.default.createDirectory(atPath: home.file(".ssh"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: server.home + "/.ssh/known_hosts", toPath: home.file(".ssh/known_hosts"))
        return home
    }

    @Test func anAgentsKeyLogsIn() async throws {
        let dir = TempDirectory()
        let server = try await Sshd.start()
        defer { server.stop() }
        let bytes = testBytes(1 << 20, seed: 21)
        try server.serve("data.bin", bytes)
        let home = try Self.keylessHome(for: server)

        // Without the agent: no key, login refused (6).
        let refused = try await HaulProcess.run(["--plain", "-q", "-o", "none", server.url("data.bin")], in: dir.path,
                                                environment: ["HOME": home.path, "SSH_AUTH_SOCK": ""])
        #expect(refused.status == 6, "\(refused)")

        // An agent of the test's, the server's authorized key added to it.
        let agentDir = TempDirectory()
        let socket = agentDir.file("agent.sock")
        // Its first line (`SSH_AUTH_SOCK=...`) comes once the socket listens: the file alone exists from the
        // bind on, and an `ssh-add` then was refused (a CI run).
        var ends: [Int32] = [0, 0]
        try #require(haul_pipe_cloexec(&ends) == 0)
        let agent = try ServerProcess(["/usr/bin/ssh-agent", "-D", "-a", socket], output: ends[1])
        defer { agent.stop() }
        close(ends[1])
        let said = LineCollector(FileHandle(fileDescriptor: ends[0], closeOnDealloc: true))
        try await said.waitFor("ssh-agent to listen", within: 30) { $0.hasPrefix("SSH_AUTH_SOCK=") }
        let added = try await runProcess(["/usr/bin/ssh-add", "-q", server.home + "/.ssh/id_ed25519"],
                                         environment: ["SSH_AUTH_SOCK": socket])
        try #require(added.status == 0, "ssh-add: \(added.output)")
        let viaAgent = try await HaulProcess.run(["--plain", "-q", "-o", "agent", server.url("data.bin")], in: dir.path,
                                                 environment: ["HOME": home.path, "SSH_AUTH_SOCK": socket])
        #expect(viaAgent.status == 0, "\(viaAgent)")
        #expect(try FileDigest.hex(of: dir.file("agent/data.bin")) == FileDigest.hex(of: server.root + "/data.bin"))
    }

    /// The login name from `--user` and from the URL, the key from ~/.ssh: both log in; a user the server does
    /// not know is refused (6), its password never shown.
    @Test func theUserComesFromTheOptionOrTheURL() async throws {
        let dir = TempDirectory()
        let server = try await Sshd.start()
        defer { server.stop() }
        try server.serve("data.bin", testBytes(64 << 10, seed: 22))
        let me = NSUserName()
        let byOption = try await HaulProcess.run(["--plain", "-q", "--user", me + ":", "-o", "option",
                                                  server.url("data.bin")], in: dir.path, environment: server.environment)
        #expect(byOption.status == 0, "\(byOption)")
        let inURL = server.url("data.bin").replacingOccurrences(of: "sftp://", with: "sftp://\(me)@")
        let byURL = try await HaulProcess.run(["--plain", "-q", "-o", "url", inURL], in: dir.path,
                                              environment: server.environment)
        #expect(byURL.status == 0, "\(byURL)")
        let stranger = server.url("data.bin").replacingOccurrences(of: "sftp://", with: "sftp://nobody-here:s3cret@")
        let refused = try await HaulProcess.run(["--plain", "-q", "--retries", "0", "-o", "stranger", stranger],
                                                in: dir.path, environment: server.environment)
        #expect(refused.status == 6, "\(refused)")
        #expect(!refused.stderr.contains("s3cret") && !refused.stdout.contains("s3cret"), "\(refused)")
        for name in ["option", "url"] {
            #expect(try FileDigest.hex(of: dir.file("\(name)/data.bin")) == FileDigest.hex(of: server.root + "/data.bin"))
        }
    }
}
