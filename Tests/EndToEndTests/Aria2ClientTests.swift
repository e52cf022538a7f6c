import Foundation
import HaulCore
import SampleServer
import Testing
import TestSupport

/// Real, unmodified aria2 clients from PyPI (aria2p's API and command line, aioaria2 over WebSocket), in
/// `.build-venv` (`make pydeps`), driving haul's service, and aria2c 1.36 itself in the same test: haul
/// answers them as aria2 does.
@Suite(.serialized) struct Aria2ClientTests {
    enum Peer: String, CustomTestStringConvertible, CaseIterable {
        case haul, aria2c
        var testDescription: String { rawValue }
    }

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let venv = root + "/.build-venv/bin/"

    /// A peer answering aria2's JSON-RPC: its port, its secret's file, the directory `dir` may name, and
    /// how to stop it.
    struct Running {
        var port: Int
        var secretFile: String
        var subdir: String
        var stop: () async -> Void
    }

    static func start(_ peer: Peer, downloads: TempDirectory) async throws -> Running {
        switch peer {
        case .haul:
            let rpc = try await RPCService.start()
            let port = try #require(URLComponents(string: rpc.url)?.port)
            let secretFile = rpc.dir.file("secret")
            try Data(rpc.secret.utf8).write(to: URL(fileURLWithPath: secretFile))
            return Running(port: port, secretFile: secretFile, subdir: rpc.dir.file("more/sub"),
                           stop: { _ = try? await rpc.haul(["service", "stop"]) })
        case .aria2c:
            // aria2c takes no port 0: a port the kernel just handed out, then freed.
            let port = try freeLoopbackPort()
            let secretFile = downloads.file("secret")
            let secret = UUID().uuidString
            try Data(secret.utf8).write(to: URL(fileURLWithPath: secretFile))
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/aria2c")
            process.arguments = ["--enable-rpc", "--rpc-listen-port=\(port)", "--rpc-secret=\(secret)",
                                 "--dir=\(downloads.path)", "--max-tries=1", "--max-concurrent-downloads=5",
                                 "--console-log-level=notice", "--show-console-readout=false", "--summary-interval=0"]
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            let output = LineCollector(pipe.fileHandleForReading)
            try process.run()
            // Its one ready signal: the notice "IPv4 RPC: listening on TCP port N".
            try await output.waitFor("aria2c's RPC to listen", within: 30) { $0.contains("RPC: listening on TCP port \(port)") }
            return Running(port: port, secretFile: secretFile, subdir: downloads.file("sub"), stop: {
                // SIGKILL: aria2c's graceful SIGTERM can wait on connections for a long while.
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            })
        }
    }

    /// aria2p's `top`, its full-screen interface, shows haul's downloads.
    @Test func aria2pTopShowsHaulsDownloads() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.venv + "aria2p"),
                     "the aria2 clients are not installed: run `make pydeps`")
        let rpc = try await RPCService.start()
        let port = try #require(URLComponents(string: rpc.url)?.port)
        try await withSampleServer(rate: 256 << 10) { server in
            let added = try await rpc.call("aria2.addUri", [[server.downloadURL("medium.bin")], ["out": "seen-in-top.bin"]])
            let gid = try #require(added.result as? String)
            let top = try TmuxSession(["--host", "http://127.0.0.1", "--port", String(port), "--secret", rpc.secret, "top"],
                                      in: rpc.dir.path, executable: Self.venv + "aria2p")
            let screen = try await top.waitFor("aria2p top to list the download", within: .seconds(60)) { lines in
                lines.contains { $0.contains("seen-in-top.bin") && $0.contains(String(gid.prefix(6))) }
            }
            #expect(screen.contains { $0.contains("seen-in-top.bin") && $0.contains("active") }, "\(screen)")
            try top.send("q")
            _ = try await rpc.call("aria2.forceRemove", [gid])
            _ = try await rpc.haul(["service", "stop"])
        }
    }

    /// aria2p's notification listener, its own (websocket-client, which sends the listening address as its
    /// Origin), hears a download start and complete: it was refused (400) before that origin was allowed.
    @Test(arguments: Peer.allCases) func aria2psListenerHearsStartAndComplete(peer: Peer) async throws {
        let python = Self.venv + "python"
        try #require(FileManager.default.isExecutableFile(atPath: python),
                     "the aria2 clients are not installed: run `make pydeps`")
        let downloads = TempDirectory()
        // 1 MiB/s: small.bin runs for a moment, long enough to be started before it completes.
        try await withSampleServer(rate: 1 << 20) { server in
            let running = try await Self.start(peer, downloads: downloads)
            let run = try await runProcess([python, Self.root + "/Tests/Aria2Clients/notifications.py",
                                            "--port", String(running.port), "--secret-file", running.secretFile,
                                            "--url", server.downloadURL("small.bin")])
            await running.stop()
            try #require(run.status == 0, "\(peer): \(run.output)")
            let line = try #require(run.output.split(separator: "\n").last)
            let heard = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(heard["start"] as? Bool == true && heard["complete"] as? Bool == true, "\(peer): \(heard)")
            #expect(heard["status"] as? String == "complete")
            #expect(try FileDigest.hex(of: try #require(heard["path"] as? String)) == expectedSHA256("small.bin"))
        }
    }

    @Test(arguments: Peer.allCases) func realClientsDriveIt(peer: Peer) async throws {
        let python = Self.venv + "python"
        try #require(FileManager.default.isExecutableFile(atPath: python),
                     "the aria2 clients are not installed: run `make pydeps`")
        let downloads = TempDirectory()
        // 4 MiB/s per connection: medium.bin takes 5 s, time to pause it mid-file on any build.
        try await withSampleServer(rate: 4 << 20) { server in
            let running = try await Self.start(peer, downloads: downloads)
            let run = try await runProcess([python, Self.root + "/Tests/Aria2Clients/scenario.py",
                                            "--port", String(running.port), "--secret-file", running.secretFile,
                                            "--base", server.downloadURL(""), "--subdir", running.subdir,
                                            "--cli", Self.venv + "aria2p"])
            await running.stop()
            try #require(run.status == 0, "\(peer): \(run.output)")
            let line = try #require(run.output.split(separator: "\n").last)
            let seen = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])

            // Byte-identical files, where the client was told they are; `dir` and `out` obeyed.
            let files = try #require(seen["files"] as? [String: String])
            #expect(files["named"] == running.subdir + "/renamed.bin")
            for (key, name) in [("plain", "small.bin"), ("named", "small.bin"), ("throttled", "medium.bin")] {
                #expect(try FileDigest.hex(of: try #require(files[key])) == expectedSHA256(name), "\(peer) \(key)")
            }
            #expect(try FileDigest.hex(of: try #require(seen["cli"] as? String)) == expectedSHA256("small.bin"))
            // The pause was a pause: the server saw the rest asked for with a Range.
            #expect(server.stats.rangeRequests >= 1, "\(peer): unpause resumed")
            #expect(((seen["pausedAt"] as? Int) ?? 0) > 0)

            let global = try #require(seen["globalOptions"] as? [String: String])
            #expect(global["max-overall-download-limit"] == "1048576")
            #expect(global["max-concurrent-downloads"] == "3")
            let wrong = try #require(seen["wrongSecret"] as? [String: Any])
            #expect(wrong["code"] as? Int == 1 && wrong["message"] as? String == "Unauthorized")
            let websocket = try #require(seen["websocket"] as? [String: Any])
            #expect(websocket["start"] as? Bool == true && websocket["complete"] as? Bool == true)
            #expect(try FileDigest.hex(of: try #require(websocket["path"] as? String)) == expectedSHA256("small.bin"))
        }
    }
}
