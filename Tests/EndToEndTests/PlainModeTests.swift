import Foundation
import HaulCore
import SampleServer
import TestSupport
import Testing

/// The real binary in plain and JSON mode against the in-process sample server.
@Suite struct PlainModeTests {
    @Test(arguments: ["small.bin", "large.bin"])
    func aDownloadIsByteIdenticalWithBoundedMemory(name: String) async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let exit = try await HaulProcess.run(["--plain", "-o", "out", server.downloadURL(name)], in: dir.path,
                                                 measuringMemory: true)
            #expect(exit.status == 0, "stderr: \(exit.stderr)")
            #expect(exit.stderr.isEmpty)
            let path = dir.file("out/\(name)")
            #expect(try FileDigest.hex(of: path) == expectedSHA256(name))
            #expect(!FileManager.default.fileExists(atPath: path + ".part"))
            // Streaming to disk: a 200 MiB download must not need 200 MiB of memory.
            let rss = try #require(exit.maxRSSKiB)
            if !TestEnvironment.sanitized {
                #expect(rss < 64 * 1024, "peak RSS \(rss) KiB")
            }
            #expect(exit.stdoutLines.first == "\(name): saving to out/\(name) (\(ByteFormat.size(Int64(GeneratedFile.standardSet.first { $0.name == name }!.size))))")
            #expect(exit.stdoutLines.last?.hasPrefix("1 of 1 done, ") == true)
        }
    }

    @Test func notFoundExitsEightWithOneLine() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let url = server.downloadURL("nope.bin")
            let exit = try await HaulProcess.run(["-o", dir.path, url], in: dir.path)
            #expect(exit.status == 8)
            #expect(exit.stderr == "haul: nope.bin: server answered 404 Not Found (\(url))\n")
            #expect(dir.listing().isEmpty)
        }
    }

    @Test func aRefusedConnectionExitsFour() async throws {
        let dir = TempDirectory()
        let exit = try await HaulProcess.run(["--retries", "0", "http://127.0.0.1:1/file.bin"], in: dir.path)
        #expect(exit.status == 4)
        #expect(exit.stderr.hasPrefix("haul: file.bin: "))
        #expect(exit.stderr.hasSuffix(" (http://127.0.0.1:1/file.bin)\n"))
        #expect(exit.stderr.split(separator: "\n").count == 1)
    }

    @Test func tlsToAPlainHTTPServerExitsFive() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let url = "https://127.0.0.1:\(server.port)/files/download?small.bin"
            // A long connect timeout (it covers the handshake): under TSan at its busiest the in-process
            // server once took longer than the default 15 s to answer, and haul rightly said "network" (4).
            let exit = try await HaulProcess.run(["--retries", "0", "--connect-timeout", "300", url], in: dir.path)
            #expect(exit.status == 5, "\(exit.stderr)")
            #expect(exit.stderr.hasPrefix("haul: small.bin: "))
            #expect(exit.stderr.hasSuffix(" (\(url))\n"))
            #expect(dir.listing().isEmpty)
        }
    }

    @Test func anUnwritableOutputDirectoryExitsThree() async throws {
        let dir = TempDirectory()
        _ = FileManager.default.createFile(atPath: dir.file("blocker"), contents: Data("x".utf8))
        try await withSampleServer { server in
            let url = server.downloadURL("small.bin")
            let exit = try await HaulProcess.run(["-o", "blocker/sub", url], in: dir.path)
            #expect(exit.status == 3)
            #expect(exit.stderr == "haul: small.bin: cannot create directory blocker/sub: Not a directory (\(url))\n")
        }
    }

    @Test(arguments: [
        ("gopher://example.com/x", "haul: x: unsupported URL scheme \"gopher\" (gopher://example.com/x)\n"),
        ("http://", "haul: index.html: URL has no host (http://)\n"),
    ])
    func aBadURLIsAUsageError(url: String, message: String) async throws {
        let dir = TempDirectory()
        let exit = try await HaulProcess.run([url], in: dir.path)
        #expect(exit.status == 2)
        #expect(exit.stderr == message)
    }

    @Test func badOptionsAreUsageErrors() async throws {
        let dir = TempDirectory()
        let noURL = try await HaulProcess.run([], in: dir.path)
        #expect(noURL.status == 2)
        #expect(noURL.stderr.hasPrefix("haul: no URL given"))
        let badRate = try await HaulProcess.run(["--limit-rate", "fast", "http://h/x"], in: dir.path)
        #expect(badRate.status == 2)
        #expect(badRate.stderr.contains("--limit-rate: 'fast' is not a rate"))
        let version = try await HaulProcess.run(["--version"], in: dir.path)
        #expect(version.status == 0)
        #expect(version.stdout == HaulVersion.string + "\n")
    }

    /// Asking for the version or the help prints it without loading libcurl (and its thirty libraries): loaded
    /// in the background, the exit waited for it. A download does load it (the dynamic loader's own log says
    /// which files it opens: `LD_DEBUG=files`).
    @Test func theVersionAndTheHelpDoNotLoadLibcurl() async throws {
        let dir = TempDirectory()
        let loaded = "file=libcurl.so.4"
        for arguments in [["--version"], ["--help"], ["-h"], ["-q", "http://127.0.0.1:1/x", "--help"]] {
            let exit = try await HaulProcess.run(arguments, in: dir.path, environment: ["LD_DEBUG": "files"])
            #expect(exit.status == 0, "\(arguments): \(exit)")
            #expect(!exit.stdout.isEmpty)
            #expect(!exit.stderr.contains(loaded), "\(arguments) loaded libcurl")
        }
        let download = try await HaulProcess.run(["-q", "--retries", "0", "http://127.0.0.1:1/x"], in: dir.path,
                                                 environment: ["LD_DEBUG": "files"])
        #expect(download.status != 0)
        #expect(download.stderr.contains(loaded), "a download loads libcurl")
    }

    @Test func sigintStopsWithExit130AndKeepsThePartFile() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 2 << 20) { server in
            let process = try HaulProcess(["--json", server.downloadURL("medium.bin")], in: dir.path)
            let progress = try await within(20, "a progress event") {
                await process.firstLine { $0.contains(#""event":"progress""#) }
            }
            #expect(progress != nil)
            process.send(SIGINT)
            let exit = await process.wait()
            #expect(exit.status == 130)
            #expect(exit.stderr == "haul: medium.bin: interrupted (\(server.downloadURL("medium.bin")))\n")
            let part = try FileManager.default.attributesOfItem(atPath: dir.file("medium.bin.part"))
            #expect((part[.size] as? Int ?? 0) > 0)
            #expect(!FileManager.default.fileExists(atPath: dir.file("medium.bin")))
        }
    }

    @Test(arguments: [
        ("attachment; filename=\"../../escaped.bin\"", "escaped.bin"),
        ("attachment; filename=\"/etc/passwd\"", "passwd"),
        ("attachment; filename*=UTF-8''..%2F..%2Fbell%07%1B%5B31mred%0A.bin", "bell[31mred.bin"),
        ("attachment; filename=\"..\"", "download"),
    ])
    func aHostileContentDispositionStaysInsideTheOutputDirectory(header: String, saved: String) async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            var faults = SampleServerFaults()
            faults.contentDisposition = header
            server.setFaults(faults)
            let exit = try await HaulProcess.run(["-q", "-o", "inside/deeper", server.downloadURL("small.bin")], in: dir.path)
            #expect(exit.status == 0, "\(exit.stderr)")
            // The only thing written anywhere in the temp dir is the sanitised name inside the output dir.
            #expect(dir.listing() == ["inside"])
            let files = try FileManager.default.contentsOfDirectory(atPath: dir.file("inside/deeper"))
            #expect(files == [saved])
        }
    }

    @Test func segmentsJobsAndAChecksumFromTheCommandLine() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 16 << 20) { server in
            let urls = [server.downloadURL("medium.bin"), server.downloadURL("small.bin")]
            let exit = try await HaulProcess.run(["-q", "-s", "4", "-j", "2"] + urls, in: dir.path)
            #expect(exit.status == 0, "\(exit.stderr)")
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
            #expect(server.stats.rangeRequests >= 5)
            let wrong = try await HaulProcess.run(["--checksum", "sha256=" + String(repeating: "0", count: 64),
                                                   "-O", "checked.bin", server.downloadURL("small.bin")], in: dir.path)
            #expect(wrong.status == 9)
            #expect(wrong.stderr.hasPrefix("haul: checked.bin: checksum mismatch: sha256 is \(expectedSHA256("small.bin"))"))
            let right = try await HaulProcess.run(["-q", "--checksum", "sha256=" + expectedSHA256("small.bin"),
                                                   "-O", "checked.bin", server.downloadURL("small.bin")], in: dir.path)
            #expect(right.status == 0, "\(right.stderr)")
            #expect(dir.listing() == ["checked.bin", "medium.bin", "small.bin"])
        }
    }

    /// A server that serves a client two connections at once (503 to the others): `-s 4` ends whole in one
    /// attempt even with `--retries 0`, says which connections it lost, and counts the whole file as this run's.
    @Test func segmentsAServerRefusesGoToTheConnectionsItServes() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 16 << 20) { server in
            var faults = SampleServerFaults()
            faults.bodiesAtOnce = 2
            server.setFaults(faults)
            let exit = try await HaulProcess.run(["--json", "-s", "4", "--retries", "0", server.downloadURL("medium.bin")],
                                                 in: dir.path)
            #expect(exit.status == 0, "\(exit.stderr)")
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
            let events = exit.stdout.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            let dropped = events.filter { $0["kind"] as? String == "connection-dropped" }
            #expect(!dropped.isEmpty, "\(exit.stdout)")
            let fact = (dropped.first?["fact"] as? [String: Any])?["connectionDropped"] as? [String: Any]
            #expect((fact?["reason"] as? [String: Any])?["httpStatus"] as? Int == 503, "\(dropped)")
            #expect((dropped.first?["message"] as? String)?.hasPrefix("a connection failed (server answered 503") == true)
            let done = events.first { $0["event"] as? String == "done" }
            #expect(done?["bytes"] as? Int == 20 << 20, "\(exit.stdout)")
        }
    }

    @Test func theDemoServesAndDownloadsTheSampleFiles() async throws {
        let dir = TempDirectory()
        let exit = try await HaulProcess.run(["--demo", "--plain"], in: dir.path)
        #expect(exit.status == 0, "\(exit.stderr)")
        #expect(exit.stdoutLines.first?.hasPrefix("Sample server on http://127.0.0.1:") == true)
        #expect(exit.stdoutLines.last?.hasPrefix("3 of 3 done, ") == true)
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: dir.file("haul-demo")))
                == ["medium.bin", "photo-large.jpg", "small.bin"])
        #expect(try FileDigest.hex(of: dir.file("haul-demo/medium.bin")) == expectedSHA256("medium.bin"))
    }

    @Test func jsonModePrintsOneObjectPerEvent() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let exit = try await HaulProcess.run(["--json", server.downloadURL("small.bin"), server.downloadURL("gone.bin")],
                                                 in: dir.path)
            #expect(exit.status == 8)
            let events = try exit.stdoutLines.map { line in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            }
            let kinds = events.compactMap { $0["event"] as? String }
            #expect(kinds.contains("started"))
            #expect(kinds.contains("progress"))
            // Downloads run concurrently: "done" and "failed" come in either order, the summary last.
            #expect(kinds.last == "summary")
            #expect(kinds.filter { $0 == "done" || $0 == "failed" }.sorted() == ["done", "failed"])
            let done = try #require(events.first { $0["event"] as? String == "done" })
            #expect(done["bytes"] as? Int == 1 << 20)
            #expect(done["file"] as? String == "small.bin")
            let failed = try #require(events.first { $0["event"] as? String == "failed" })
            #expect(failed["category"] as? String == "server")
            #expect(failed["exit"] as? Int == 8)
            #expect(events.last?["exit"] as? Int == 8)
        }
    }

    @Test func namingOptionsAndAnInputFile() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let url = server.downloadURL("small.bin")
            let named = try await HaulProcess.run(["-q", "-O", "mine.dat", url], in: dir.path)
            #expect(named.status == 0)
            #expect(named.stdout.isEmpty)
            let list = "# two downloads of one file\n\n\(url)\n  \(url)  \n"
            let listed = try await HaulProcess.run(["-q", "-i", "-"], in: dir.path, stdin: list)
            #expect(listed.status == 0, "\(listed.stderr)")
            // The second copy does not overwrite the first: it gets the next free name.
            #expect(dir.listing() == ["mine.dat", "small.1.bin", "small.bin"])
            let skipped = try await HaulProcess.run(["--skip-existing", url], in: dir.path)
            #expect(skipped.stdoutLines.first == "small.bin: exists, skipped (./small.bin)")
            #expect(dir.listing() == ["mine.dat", "small.1.bin", "small.bin"])

            // A pipe, as `-i <(command)` hands one over.
            let fifo = dir.file("urls.fifo")
            #expect(mkfifo(fifo, 0o600) == 0)
            Thread.detachNewThread {
                let fd = open(fifo, O_WRONLY)
                _ = Array("\(url)\n".utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                close(fd)
            }
            let piped = try await HaulProcess.run(["-q", "-o", "piped", "-i", "urls.fifo"], in: dir.path)
            #expect(piped.status == 0, "\(piped.stderr)")
            #expect(dir.contents("piped/small.bin") == expectedBytes("small.bin"))

            let missing = try await HaulProcess.run(["-i", "nowhere.txt"], in: dir.path)
            #expect(missing.status == 3)
            #expect(missing.stderr.contains("cannot read the input file nowhere.txt: No such file or directory"))
        }
    }
}
