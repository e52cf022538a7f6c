import Foundation
import HaulCore
import SampleServer
import Testing
import TestSupport

/// The faces that give a download its sources and show them, through the real binary: `--mirror` and
/// `--max-connection-per-server` in plain mode and through `haul add` to the service, an input file's
/// tab-separated URLs, aria2's `addUri` of several URIs, and numbered series (globbing) with `-O '#1'`.
@Suite struct SourcesFacesTests {
    /// Whatever the engine makes of the mirror, the file comes whole (from the first source, until the engine
    /// asks the others).
    @Test func aDownloadWithMirrorsSucceedsInPlainMode() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            try await withSampleServer { mirror in
                let run = try await HaulProcess.run(
                    ["--plain", "-o", "out", "-s", "4", server.downloadURL("medium.bin"),
                     "--mirror", mirror.downloadURL("medium.bin"), "--max-connection-per-server", "2"], in: dir.path)
                #expect(run.status == 0, "\(run.stderr)")
                #expect(try FileDigest.hex(of: dir.file("out/medium.bin")) == expectedSHA256("medium.bin"))
                let listed = try await HaulProcess.run(["--plain", "-o", "listed", "-i", "-"], in: dir.path,
                                                       stdin: server.downloadURL("small.bin") + "\t\t"
                                                           + mirror.downloadURL("small.bin") + " \n")
                #expect(listed.status == 0, "\(listed.stderr)")
                #expect(dir.contents("listed/small.bin") == expectedBytes("small.bin"))
            }
        }
    }

    @Test(arguments: [
        (["http://127.0.0.1:1/a", "http://127.0.0.1:1/b", "--mirror", "http://127.0.0.1:1/m"],
         "haul: --mirror takes a single URL"),
        (["http://127.0.0.1:1/f[1-2]", "--mirror", "http://127.0.0.1:1/m"], "haul: --mirror takes a single URL"),
        (["http://127.0.0.1:1/a", "--mirror", "rsync://127.0.0.1/m"],
         "haul: --mirror 'rsync://127.0.0.1/m': unsupported URL scheme \"rsync\""),
        (["http://127.0.0.1:1/a", "--mirror", "http://127.0.0.1:1/m\r\nX-A: 1"],
         "haul: --mirror 'http://127.0.0.1:1/m??X-A: 1': URL contains spaces or control characters"),
        (["http://127.0.0.1:1/a", "--max-connection-per-server", "17"],
         "haul: --max-connection-per-server must be from 1 to 16, not 17"),
        (["http://127.0.0.1:1/f[1-1000000000]"],
         "haul: 'http://127.0.0.1:1/f[1-1000000000]': expands to 1000000000 URLs, more than the 100000 one pattern may give (-g turns globbing off)"),
        (["http://127.0.0.1:1/f[3-1]"], "haul: 'http://127.0.0.1:1/f[3-1]': bad range at character 21 of the URL"),
        (["-O", "x.bin", "http://127.0.0.1:1/f[1-2]"],
         "haul: --output takes a single URL (or #1, #2... for the values of a numbered series)"),
        (["-o", "out", "-O", "x#1", "http://127.0.0.1:1/{a/b,c}"],
         "haul: --output 'x#1' makes 'xa/b' for http://127.0.0.1:1/a/b, which is a path, not a file name"),
    ])
    func badSourcesAndSeriesAreUsageErrors(arguments: [String], message: String) async throws {
        let dir = TempDirectory()
        let run = try await HaulProcess.run(["--plain"] + arguments, in: dir.path)
        #expect(run.status == 2)
        #expect(run.stderr == message + "\n")
        #expect(dir.listing().isEmpty)
    }

    @Test func aBadMirrorInAnInputFileStopsTheRun() async throws {
        let dir = TempDirectory()
        let run = try await HaulProcess.run(["--plain", "-i", "-"], in: dir.path,
                                            stdin: "http://127.0.0.1:1/a\thttp://127.0.0.1:1/m\n"
                                                + "http://127.0.0.1:1/b\tgopher://127.0.0.1/m\n")
        #expect(run.status == 2)
        #expect(run.stderr == "haul: -: line 2: mirror 'gopher://127.0.0.1/m': unsupported URL scheme \"gopher\"\n")
        #expect(dir.listing().isEmpty)
    }

    /// `haul add` sends the job whole: the service lists every source (passwords masked) and the aria2 face
    /// sees the same job, its per-server cap among its options. An input file's line and aria2's `addUri` of
    /// several URIs are one download each, with all of them.
    @Test func theQueueKeepsEverySource() async throws {
        let rpc = try await RPCService.start()
        // Slow, so that nothing is done before it is looked at (what is shown does not depend on it).
        try await withSampleServer(rate: 64 << 10) { server in
            let url = server.downloadURL("medium.bin")
            let mirror = "http://ann:secret@127.0.0.1:\(server.port)/files/download?medium.bin"
            let masked = "http://ann:***@127.0.0.1:\(server.port)/files/download?medium.bin"
            let added = try await rpc.haul(["add", "-o", "cli", url, "--mirror", mirror, "--max-connection-per-server", "3"])
            #expect(added.status == 0, "\(added.stderr)")
            let small = server.downloadURL("small.bin")
            try Data("\(small)\t\(url)\n  out=listed.bin\n".utf8).write(to: URL(fileURLWithPath: rpc.dir.file("list.txt")))
            #expect(try await rpc.haul(["add", "-o", "cli", "-i", "list.txt"]).status == 0)
            let viaRPC = try await rpc.call("aria2.addUri", [[url, small, mirror], ["max-connection-per-server": "2"]])
            let rpcGID = try #require(viaRPC.result as? String, "\(viaRPC.body)")

            let ls = try await rpc.haul(["ls", "--json"])
            #expect(!ls.stdout.contains("secret"))
            let listed = try #require(try JSONSerialization.jsonObject(with: Data(ls.stdout.utf8)) as? [[String: Any]])
            #expect(listed.count == 3)
            let sources = listed.map { ($0["sources"] as? [[String: Any]])?.compactMap { $0["url"] as? String } }
            #expect(sources == [[url, masked], [small, url], [url, small, masked]])
            let first = try #require((listed.first?["sources"] as? [[String: Any]])?.first)
            #expect(Set(first.keys) == ["url", "state", "bytes", "speed", "connections", "error"])
            #expect(first["error"] is NSNull)
            let plain = try await rpc.haul(["ls"])
            #expect(plain.stdout.split(separator: "\n").dropFirst().allSatisfy { $0.contains("sources)") }, "\(plain.stdout)")

            let gid = try #require(listed.first?["gid"] as? String)
            let options = try #require(try await rpc.call("aria2.getOption", [gid]).result as? [String: Any])
            #expect(options["max-connection-per-server"] as? String == "3")
            for (gid, expected) in [(gid, [url, masked]), (rpcGID, [url, small, masked])] {
                let uris = try #require(try await rpc.call("aria2.getUris", [gid]).result as? [[String: String]])
                #expect(uris.map { $0["uri"] } == expected)
                #expect(uris.allSatisfy { $0["status"] == "used" || $0["status"] == "waiting" })
                let status = try #require(try await rpc.call("aria2.tellStatus", [gid, ["files"]]).result as? [String: Any])
                let files = try #require(status["files"] as? [[String: Any]])
                #expect((files.first?["uris"] as? [[String: String]])?.map { $0["uri"] } == expected)
            }
            let rpcOptions = try #require(try await rpc.call("aria2.getOption", [rpcGID]).result as? [String: Any])
            #expect(rpcOptions["max-connection-per-server"] as? String == "2")
            for download in listed {
                if let gid = download["gid"] as? String { _ = try await rpc.call("aria2.forceRemove", [gid]) }
            }
        }
    }

    /// A numbered series fetches each of its URLs; `-O 'x#1'` names each by its value; `-g` takes the
    /// brackets as they are.
    @Test func aNumberedSeriesFetchesEachFile() async throws {
        let files = (1...3).map { GeneratedFile(name: "f\($0).bin", size: 100_000 + $0) }
        try await withSampleServer(SampleServerConfiguration(port: 0, files: files, jpegs: false)) { server in
            let dir = TempDirectory()
            let pattern = server.baseURL + "/files/download?f[1-3].bin"
            let run = try await HaulProcess.run(["--plain", "-o", "out", pattern], in: dir.path)
            #expect(run.status == 0, "\(run.stderr)")
            let named = try await HaulProcess.run(["--plain", "-o", "named", "-O", "x#1.bin", pattern], in: dir.path)
            #expect(named.status == 0, "\(named.stderr)")
            for (index, file) in files.enumerated() {
                let bytes = file.bytes(offset: 0, count: file.size)
                #expect(dir.contents("out/\(file.name)") == bytes)
                #expect(dir.contents("named/x\(index + 1).bin") == bytes)
            }
            #expect(dir.listing().sorted() == ["named", "out"])
            let off = try await HaulProcess.run(["--plain", "-g", "--retries", "0", "-o", "off", pattern], in: dir.path)
            #expect(off.status != 0)
            #expect(off.stderr.split(separator: "\n").count == 1, "\(off.stderr)")
            #expect(!FileManager.default.fileExists(atPath: dir.file("off/f1.bin")))

            // `haul add` queues the series, each under its name.
            let home = ServiceHome()
            let added = try await HaulProcess.run(["add", "-o", "queued", "-O", "y#1.bin", pattern], in: dir.path,
                                                  environment: home.environment)
            #expect(added.status == 0, "\(added.stderr)")
            #expect(added.stdoutLines.map { $0.split(separator: " ").last.map(String.init) } == ["y1.bin", "y2.bin", "y3.bin"])
            let ls = try await HaulProcess.run(["ls", "--json"], in: dir.path, environment: home.environment)
            let listed = try #require(try JSONSerialization.jsonObject(with: Data(ls.stdout.utf8)) as? [[String: Any]])
            #expect(listed.compactMap { $0["url"] as? String } == (1...3).map { server.baseURL + "/files/download?f\($0).bin" })
            _ = try await HaulProcess.run(["cancel", "--all"], in: dir.path, environment: home.environment)
        }
    }
}
