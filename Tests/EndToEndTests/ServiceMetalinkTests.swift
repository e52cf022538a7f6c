import Foundation
import HaulCore
import SampleServer
import Testing
import TestSupport

/// Metalinks in the service (issue 74): a URL whose server answers a metalink media type is followed as aria2's
/// `follow-metalink=true` follows it (its files become downloads of the same queue, aria2's `followedBy` and
/// `following` link them, a restart keeps them), a hostile document fails the download with one line, aria2's
/// `addMetalink` says which files it refused; `-i` takes a line that names a local metalink file.
@Suite struct ServiceMetalinkTests {
    /// Runs `body` with Python's own HTTP server serving `directory` on loopback, `.meta4` as
    /// `application/metalink4+xml` (as a distribution's mirror does); it prints the port it took.
    static func withMetalinkServer<T>(serving directory: String, _ body: (Int) async throws -> T) async throws -> T {
        let script = """
            import http.server
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
        python.currentDirectoryURL = URL(fileURLWithPath: directory)
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
        return try await body(try #require(lines.lines.first.flatMap { Int($0) }))
    }

    /// `gid`'s status once it is finished (complete, error or removed).
    static func finished(_ gid: String, _ rpc: RPCService) async throws -> [String: Any] {
        try await RPCAbuseTests.poll("\(gid) to finish") { () -> [String: Any]? in
            let status = try await rpc.call("aria2.tellStatus", [gid])
            let object = try #require(status.result as? [String: Any], "\(status.body)")
            let state = object["status"] as? String
            return state == "complete" || state == "error" || state == "removed" ? object : nil
        }
    }

    /// A URL that answers a two-file metalink: the document is saved and its download completes once its files
    /// are in the queue (`followedBy`, each file `following` it, as in aria2), `haul ls` lists the three, the
    /// files land under the document's folder checked against its hashes, and a restart keeps the links.
    @Test func theServiceFollowsAMetalinkAndARestartKeepsTheLinks() async throws {
        let rpc = try await RPCService.start()
        let served = TempDirectory()
        try await withSampleServer { server in
            try MetalinkTests.document([
                ("small.bin", server.downloadURL("small.bin"), expectedSHA256("small.bin")),
                ("sub/medium.bin", server.downloadURL("medium.bin"), expectedSHA256("medium.bin")),
            ]).write(toFile: served.file("set.meta4"), atomically: true, encoding: .utf8)
            try await Self.withMetalinkServer(serving: served.path) { port in
                let added = try await rpc.call("aria2.addUri", [["http://127.0.0.1:\(port)/set.meta4"]])
                let gid = try #require(added.result as? String, "\(added.body)")
                let status = try await Self.finished(gid, rpc)
                #expect(status["status"] as? String == "complete", "\(status) \(rpc.log)")
                let followers = try #require(status["followedBy"] as? [String], "\(status)")
                #expect(followers.count == 2)
                #expect(status["following"] == nil)
                for follower in followers {
                    let done = try await Self.finished(follower, rpc)
                    #expect(done["status"] as? String == "complete", "\(done) \(rpc.log)")
                    #expect(done["following"] as? String == gid)
                    #expect(done["followedBy"] == nil)
                }
                let dl = rpc.dir.file("dl")
                #expect(try Data(contentsOf: URL(fileURLWithPath: dl + "/set/small.bin")) == Data(expectedBytes("small.bin")))
                #expect(try FileDigest.hex(of: dl + "/set/sub/medium.bin") == expectedSHA256("medium.bin"))
                #expect(FileManager.default.fileExists(atPath: dl + "/set.meta4"))

                let listed = try await rpc.haul(["ls", "--json"])
                let rows = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]],
                                        "\(listed.stdout)")
                #expect(rows.map { $0["file"] as? String } == [dl + "/set.meta4", dl + "/set/small.bin", dl + "/set/sub/medium.bin"])
                #expect(rows.allSatisfy { $0["state"] as? String == "done" }, "\(rows)")

                #expect(try await rpc.haul(["service", "stop"]).status == 0)
                let again = try await RPCService.restart(rpc)
                let kept = try #require(try await again.call("aria2.tellStatus", [gid]).result as? [String: Any])
                #expect(kept["status"] as? String == "complete", "\(kept)")
                #expect(kept["followedBy"] as? [String] == followers, "\(kept)")
                for follower in followers {
                    let status = try await again.call("aria2.tellStatus", [follower, ["following"]])
                    #expect((status.result as? [String: Any])?["following"] as? String == gid, "\(status.body)")
                }
            }
        }
    }

    /// A document that declares an entity fails its download with the parser's one line (aria2's error 1 here;
    /// exit 7 in a plain run) and adds nothing; one that lists a file named `../escape.bin` beside a good
    /// one queues the good one, fails with the refused name, and says it in the service's log; nothing is
    /// written outside the output directory.
    @Test func aHostileMetalinkFailsItsDownloadWithOneLine() async throws {
        let rpc = try await RPCService.start()
        let served = TempDirectory()
        try await withSampleServer { server in
            try """
                <?xml version="1.0"?><!DOCTYPE m [<!ENTITY e "x">]>
                <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="&e;"><url>http://a/</url></file></metalink>
                """.write(toFile: served.file("bad.meta4"), atomically: true, encoding: .utf8)
            try MetalinkTests.document([
                ("../escape.bin", server.downloadURL("small.bin"), nil),
                ("good.bin", server.downloadURL("small.bin"), expectedSHA256("small.bin")),
            ]).write(toFile: served.file("mixed.meta4"), atomically: true, encoding: .utf8)
            try await Self.withMetalinkServer(serving: served.path) { port in
                let bad = try await rpc.call("aria2.addUri", [["http://127.0.0.1:\(port)/bad.meta4"]])
                let badGID = try #require(bad.result as? String, "\(bad.body)")
                let failed = try await Self.finished(badGID, rpc)
                #expect(failed["status"] as? String == "error")
                let message = try #require(failed["errorMessage"] as? String)
                #expect(message.hasSuffix("declares the entity 'e' (entities are refused)"), "\(message)")
                #expect(!message.contains("\n"))
                #expect(failed["followedBy"] == nil)

                let mixed = try await rpc.call("aria2.addUri", [["http://127.0.0.1:\(port)/mixed.meta4"]])
                let mixedGID = try #require(mixed.result as? String, "\(mixed.body)")
                let refused = try await Self.finished(mixedGID, rpc)
                #expect(refused["status"] as? String == "error")
                #expect((refused["errorMessage"] as? String)?.hasSuffix("mixed.meta4: file '../escape.bin': goes up out of the folder (..)")
                        == true, "\(refused)")
                let followers = try #require(refused["followedBy"] as? [String], "\(refused)")
                #expect(followers.count == 1)
                #expect(try await Self.finished(followers[0], rpc)["status"] as? String == "complete")
                #expect(try FileDigest.hex(of: rpc.dir.file("dl/mixed/good.bin")) == expectedSHA256("small.bin"))
                #expect(rpc.log.contains("mixed.meta4: file '../escape.bin': goes up out of the folder (..)"), "\(rpc.log)")
                #expect(TempDirectory.listing(rpc.dir.file("dl")) == ["bad.meta4", "mixed", "mixed.meta4"])
                #expect(TempDirectory.listing(rpc.dir.file("dl/mixed")) == ["good.bin"])
                #expect(!FileManager.default.fileExists(atPath: rpc.dir.file("escape.bin")))
            }
        }
    }

    /// aria2's `addMetalink` with some files refused: the GIDs of the others, and one line of the service's log
    /// for each refused one; with every file refused, a JSON-RPC error naming the first and how many more.
    @Test func addMetalinkSaysWhichFilesItRefused() async throws {
        let rpc = try await RPCService.start()
        try await withSampleServer { server in
            let partly = MetalinkTests.document([
                ("small.bin", server.downloadURL("small.bin"), expectedSHA256("small.bin")),
                ("../up.bin", server.downloadURL("small.bin"), nil),
                ("/etc/abs.bin", server.downloadURL("small.bin"), nil),
            ])
            let added = try await rpc.call("aria2.addMetalink", [Data(partly.utf8).base64EncodedString()])
            let gids = try #require(added.result as? [String], "\(added.body)")
            #expect(gids.count == 1)
            #expect(try await Self.finished(gids[0], rpc)["status"] as? String == "complete")
            let log = rpc.log
            #expect(log.contains("haul service: addMetalink: metalink: file '../up.bin': goes up out of the folder (..)\n"), "\(log)")
            #expect(log.contains("haul service: addMetalink: metalink: file '/etc/abs.bin': is an absolute path\n"), "\(log)")

            let none = MetalinkTests.document([
                ("../a.bin", server.downloadURL("small.bin"), nil),
                ("../b.bin", server.downloadURL("small.bin"), nil),
            ])
            let refused = try await rpc.call("aria2.addMetalink", [Data(none.utf8).base64EncodedString()])
            #expect(refused.errorCode == 1)
            #expect(refused.errorMessage == "metalink: file '../a.bin': goes up out of the folder (..) (and 1 more)",
                    "\(refused.body)")
            #expect(TempDirectory.listing(rpc.dir.file("dl")) == ["metalink"])
            #expect(TempDirectory.listing(rpc.dir.file("dl/metalink")) == ["small.bin"])
        }
    }

    /// `-i FILE` whose line names a local metalink file downloads what it describes, as `haul FILE.meta4` does,
    /// with that line's `dir=` over `-o`; a URL line beside it downloads as before.
    @Test func anInputFileLineNamingAMetalinkFileExpands() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            try MetalinkTests.document([
                ("small.bin", server.downloadURL("small.bin"), expectedSHA256("small.bin")),
                ("sub/medium.bin", server.downloadURL("medium.bin"), expectedSHA256("medium.bin")),
            ]).write(toFile: dir.file("set.meta4"), atomically: true, encoding: .utf8)
            try "set.meta4\n  dir=elsewhere\n\(server.downloadURL("small.bin"))\n"
                .write(toFile: dir.file("list.txt"), atomically: true, encoding: .utf8)
            let run = try await HaulProcess.run(["--no-config", "--plain", "-q", "-o", "out", "-i", "list.txt"], in: dir.path)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try FileDigest.hex(of: dir.file("elsewhere/set/small.bin")) == expectedSHA256("small.bin"))
            #expect(try FileDigest.hex(of: dir.file("elsewhere/set/sub/medium.bin")) == expectedSHA256("medium.bin"))
            #expect(try FileDigest.hex(of: dir.file("out/small.bin")) == expectedSHA256("small.bin"))
        }
    }
}

extension TempDirectory {
    /// The names in `path`, sorted.
    static func listing(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }
}
