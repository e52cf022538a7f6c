import Foundation
import HaulCore
import SampleServer
import Testing
import TestSupport

/// Metalinks end to end: `haul FILE.meta4` (and `--metalink`) against the sample server, the files
/// byte-identical and their hashes checked; aria2's `addMetalink` through the service.
@Suite struct MetalinkTests {
    /// A metalink 4 document of `files`: (name, served file, sha-256 or nil, extra URLs).
    static func document(_ files: [(name: String, url: String, sha256: String?)]) -> String {
        var text = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">\n"
        for file in files {
            text += "  <file name=\"\(file.name)\">\n"
            if let sha256 = file.sha256 { text += "    <hash type=\"sha-256\">\(sha256)</hash>\n" }
            text += "    <url location=\"de\" priority=\"1\">\(file.url)</url>\n  </file>\n"
        }
        return text + "</metalink>\n"
    }

    /// One file: downloaded into `-o`, identical, its hash checked (a wrong one fails with exit 9 and the file
    /// takes no name).
    @Test func aMeta4FileDownloadsAndIsChecked() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            try Self.document([("small.bin", server.downloadURL("small.bin"), expectedSHA256("small.bin"))])
                .write(toFile: dir.file("release.meta4"), atomically: true, encoding: .utf8)
            let run = try await HaulProcess.run(["--no-config", "--plain", "-q", "-o", "out", "release.meta4"], in: dir.path)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("out/small.bin"))) == Data(expectedBytes("small.bin")))

            try Self.document([("small.bin", server.downloadURL("small.bin"), String(repeating: "0", count: 64))])
                .write(toFile: dir.file("wrong.xml"), atomically: true, encoding: .utf8)
            let wrong = try await HaulProcess.run(["--no-config", "--plain", "-q", "-o", "bad", "--metalink", "wrong.xml"],
                                                  in: dir.path)
            #expect(wrong.status == 9, "\(wrong.stderr)")
            #expect(wrong.stderr.contains("checksum mismatch"), "\(wrong.stderr)")
            #expect(!FileManager.default.fileExists(atPath: dir.file("bad/small.bin")))
        }
    }

    /// Several files: one folder named after the document, a file's directories below it; a name that would
    /// leave it is refused in one line (exit 2) while the others download; nothing lands outside `-o`.
    @Test func aMultiFileMetalinkGoesUnderOneFolder() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            try Self.document([
                ("small.bin", server.downloadURL("small.bin"), expectedSHA256("small.bin")),
                ("sub/medium.bin", server.downloadURL("medium.bin"), expectedSHA256("medium.bin")),
                ("../escape.bin", server.downloadURL("small.bin"), nil),
                ("/tmp/absolute.bin", server.downloadURL("small.bin"), nil),
            ]).write(toFile: dir.file("set.metalink"), atomically: true, encoding: .utf8)
            let run = try await HaulProcess.run(["--no-config", "--plain", "-q", "-o", "out", "set.metalink"], in: dir.path)
            #expect(run.status == 2, "\(run.stderr)")
            #expect(run.stderr.split(separator: "\n") == [
                "haul: set.metalink: file '../escape.bin': goes up out of the folder (..)",
                "haul: set.metalink: file '/tmp/absolute.bin': is an absolute path",
            ])
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("out/set/small.bin"))) == Data(expectedBytes("small.bin")))
            #expect(try FileDigest.hex(of: dir.file("out/set/sub/medium.bin")) == expectedSHA256("medium.bin"))
            #expect(dir.listing() == ["out", "set.metalink"])
            #expect(!FileManager.default.fileExists(atPath: dir.file("out/escape.bin")))
            #expect(!FileManager.default.fileExists(atPath: "/tmp/absolute.bin"))
        }
    }

    /// A hostile document stops the command with one line and exit 2, before anything is downloaded.
    @Test func anEntityIsRefusedBeforeAnyDownload() async throws {
        let dir = TempDirectory()
        try """
            <?xml version="1.0"?>
            <!DOCTYPE metalink [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="a"><url>http://127.0.0.1:1/&secret;</url></file></metalink>
            """.write(toFile: dir.file("x.meta4"), atomically: true, encoding: .utf8)
        let run = try await HaulProcess.run(["--no-config", "--plain", "-o", "out", "x.meta4"], in: dir.path)
        #expect(run.status == 2)
        #expect(run.stderr == "haul: x.meta4: line 2: declares the entity 'secret' (entities are refused)\n")
        #expect(dir.listing() == ["x.meta4"])
    }

    /// A URL whose server answers `application/metalink4+xml` (aria2's follow-metalink): the document is saved,
    /// and the files it lists are downloaded under its folder; one that declares an entity fails with exit 7.
    @Test func aURLAnsweringAMetalinkIsFollowed() async throws {
        let dir = TempDirectory()
        let served = dir.file("served")
        try FileManager.default.createDirectory(atPath: served, withIntermediateDirectories: true)
        try await withSampleServer { server in
            try Self.document([
                ("small.bin", server.downloadURL("small.bin"), expectedSHA256("small.bin")),
                ("sub/medium.bin", server.downloadURL("medium.bin"), expectedSHA256("medium.bin")),
            ]).write(toFile: served + "/set.meta4", atomically: true, encoding: .utf8)
            try """
                <?xml version="1.0"?><!DOCTYPE m [<!ENTITY e "x">]>
                <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="&e;"><url>http://a/</url></file></metalink>
                """.write(toFile: served + "/bad.meta4", atomically: true, encoding: .utf8)
            // Python's own HTTP server, told the metalink media type; it prints the port it took.
            let script = """
                import http.server, sys
                class Handler(http.server.SimpleHTTPRequestHandler):
                    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".meta4": "application/metalink4+xml"}
                    def log_message(self, *args): pass
                httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
                print(httpd.server_address[1], flush=True)
                httpd.serve_forever()
                """
            let python = Process()
            python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            python.arguments = ["-c", script]
            python.currentDirectoryURL = URL(fileURLWithPath: served)
            let output = Pipe()
            python.standardOutput = output
            try python.run()
            // SIGKILL: the test process ignores SIGTERM, and a child started from it inherits that.
            defer {
                kill(python.processIdentifier, SIGKILL)
                python.waitUntilExit()
            }
            let lines = LineCollector(output.fileHandleForReading)
            try await lines.waitFor("the server's port") { Int($0) != nil }
            let port = try #require(lines.lines.first.flatMap { Int($0) })

            let run = try await HaulProcess.run(["--no-config", "--plain", "-q", "-o", "out", "http://127.0.0.1:\(port)/set.meta4"],
                                                in: dir.path)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(FileManager.default.fileExists(atPath: dir.file("out/set.meta4")))
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("out/set/small.bin"))) == Data(expectedBytes("small.bin")))
            #expect(try FileDigest.hex(of: dir.file("out/set/sub/medium.bin")) == expectedSHA256("medium.bin"))

            let bad = try await HaulProcess.run(["--no-config", "--plain", "-q", "-o", "out", "http://127.0.0.1:\(port)/bad.meta4"],
                                                in: dir.path)
            #expect(bad.status == 7, "\(bad.stderr)")
            #expect(bad.stderr.contains("declares the entity 'e' (entities are refused)"), "\(bad.stderr)")
        }
    }

    /// `haul add FILE.meta4`: one download of the queue per file, under one folder of the absolute `-o`.
    @Test func addAMetalinkToTheQueue() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        try await withSampleServer { server in
            try Self.document([
                ("small.bin", server.downloadURL("small.bin"), expectedSHA256("small.bin")),
                ("deep/er/medium.bin", server.downloadURL("medium.bin"), expectedSHA256("medium.bin")),
            ]).write(toFile: dir.file("queue.meta4"), atomically: true, encoding: .utf8)
            let add = try await SessionTests.haul(["add", "--no-config", "-o", "out", "queue.meta4"], home, in: dir)
            #expect(add.status == 0, "\(add.stderr)")
            #expect(add.stdoutLines == ["1 small.bin", "2 medium.bin"])
            try await SessionTests.waitFor("both done", home) { $0[1]?.state == .done && $0[2]?.state == .done }
            let listed = try await SessionTests.list(home, in: dir)
            #expect(listed.map { $0["file"] as? String } == [dir.file("out/queue/small.bin"), dir.file("out/queue/deep/er/medium.bin")])
            #expect(try FileDigest.hex(of: dir.file("out/queue/deep/er/medium.bin")) == expectedSHA256("medium.bin"))
        }
    }

    /// aria2's `addMetalink`: one GID per file, the files downloaded under the service's directory.
    @Test func addMetalinkThroughTheService() async throws {
        let rpc = try await RPCService.start()
        try await withSampleServer { server in
            let document = Self.document([
                ("small.bin", server.downloadURL("small.bin"), expectedSHA256("small.bin")),
                ("more/medium.bin", server.downloadURL("medium.bin"), expectedSHA256("medium.bin")),
            ])
            let added = try await rpc.call("aria2.addMetalink", [Data(document.utf8).base64EncodedString()])
            let gids = try #require(added.result as? [String], "\(added.body)")
            #expect(gids.count == 2)
            for gid in gids {
                _ = try await RPCAbuseTests.poll("\(gid) complete") { () -> Bool? in
                    let status = try await rpc.call("aria2.tellStatus", [gid, ["status"]])
                    let state = (status.result as? [String: Any])?["status"] as? String
                    #expect(state != "error", "\(status.body) \(rpc.log)")
                    return state == "complete" || state == "error" ? true : nil
                }
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: rpc.dir.file("dl/metalink/small.bin"))) == Data(expectedBytes("small.bin")))
            #expect(try FileDigest.hex(of: rpc.dir.file("dl/metalink/more/medium.bin")) == expectedSHA256("medium.bin"))
            let bad = try await rpc.call("aria2.addMetalink", [Data("<html/>".utf8).base64EncodedString()])
            #expect(bad.errorMessage == "metalink: is not a metalink (its root is <html> in namespace '')", "\(bad.body)")
        }
    }
}
