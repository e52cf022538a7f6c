import Foundation
import HaulCore
import SampleServer
import TestSupport
import Testing

/// The real binary against hostile or careless input: numbers out of range, odd input files, names that
/// try to leave the output directory, control characters meant for the terminal, and stop signals.
/// Serialized: its forty-odd runs of the binary, one at a time, leave the cores to the suites that
/// measure latency (TUITests).
@Suite(.serialized) struct TrustTests {
    // MARK: numbers from the command line

    @Test(arguments: [
        (["--timeout", "1e300"], "--timeout"),
        (["--timeout", "9.3e18"], "--timeout"),
        (["--timeout", "1e-300"], "--timeout"),
        (["--timeout=-1"], "--timeout"),
        (["--timeout", "nan"], "--timeout"),
        (["--timeout", "inf"], "--timeout"),
        (["--connect-timeout", "1e300"], "--connect-timeout"),
        (["--connect-timeout", "0"], "--connect-timeout"),
        (["--connect-timeout", "1e-300"], "--connect-timeout"),
        (["--retries", "1001"], "--retries"),
        (["--retries=-1"], "--retries"),
        (["--max-redirs", "100000"], "--max-redirs"),
        (["--max-redirs=-1"], "--max-redirs"),
        (["-j", "65"], "--jobs"),
        (["-s", "0"], "--segments"),
        (["--limit-rate", "1e300G"], "--limit-rate"),
        (["--limit-rate", "99999999999999999999K"], "--limit-rate"),
        (["--limit-rate=-5K"], "--limit-rate"),
        (["--limit-rate", "nan"], "--limit-rate"),
        (["--limit-rate", "inf"], "--limit-rate"),
    ])
    func aNumberOutOfRangeIsAOneLineUsageError(arguments: [String], option: String) async throws {
        let dir = TempDirectory()
        // A refused port: should the number slip through, the run fails fast rather than hanging.
        let exit = try await HaulProcess.run(arguments + ["http://127.0.0.1:1/x.bin"], in: dir.path)
        #expect(exit.signal == nil, "crashed: \(exit.stderr)")
        #expect(exit.status == 2, "\(arguments): \(exit.stderr)")
        let lines = exit.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(exit.stderr)")
        #expect(lines.first?.hasPrefix("haul: \(option)") == true, "\(exit.stderr)")
        #expect(dir.listing().isEmpty)
    }

    @Test func theEdgesOfTheRangesAreAccepted() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let exit = try await HaulProcess.run(
                ["-q", "--timeout", "2592000", "--connect-timeout", "0.1", "--retries", "1000", "--max-redirs", "0",
                 "--limit-rate", "1G", server.downloadURL("small.bin")], in: dir.path)
            #expect(exit.status == 0, "\(exit.stderr)")
            let never = try await HaulProcess.run(
                ["-q", "--timeout", "0", "--connect-timeout", "2592000", "-O", "again.bin", server.downloadURL("small.bin")],
                in: dir.path)
            #expect(never.status == 0, "\(never.stderr)")
            #expect(dir.listing() == ["again.bin", "small.bin"])
        }
    }

    // MARK: -i FILE

    @Test func aDirectoryAsInputFileIsRefused() async throws {
        let dir = TempDirectory()
        #expect(mkdir(dir.file("urls"), 0o755) == 0)
        let exit = try await HaulProcess.run(["-i", "urls"], in: dir.path)
        #expect(exit.signal == nil, "crashed: \(exit.stderr)")
        #expect(exit.status == 3)
        #expect(exit.stderr == "haul: urls: cannot read the input file urls: is a directory\n")
    }

    @Test func anEndlessLineFailsFastWithoutEatingMemory() async throws {
        let dir = TempDirectory()
        let exit = try await within(20, "haul to refuse /dev/zero") {
            try await HaulProcess.run(["-i", "/dev/zero"], in: dir.path, measuringMemory: true)
        }
        #expect(exit.status == 2)
        #expect(exit.stderr == "haul: /dev/zero: line 1 is longer than 65536 bytes\n")
        if !TestEnvironment.sanitized, let rss = exit.maxRSSKiB {
            #expect(rss < 64 * 1024, "peak RSS \(rss) KiB")
        }
    }

    @Test(.enabled(if: !TestEnvironment.sanitized, "memory figures are meaningless under a sanitizer"))
    func aLongInputFileIsReadAsItGoes() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            // 80 MiB of comments, then one URL: only the URL needs to be kept (read whole, as before, the
            // text alone would be 80 MiB, over the bound).
            let fd = open(dir.file("urls.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            #expect(fd >= 0)
            let comment = Array((String(repeating: "#", count: 1023) + "\n").utf8)
            let block = Array(repeating: comment, count: 1024).flatMap { $0 }
            for _ in 0..<80 {
                _ = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            }
            _ = Array("\(server.downloadURL("small.bin"))\n".utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
            let exit = try await HaulProcess.run(["-q", "-i", "urls.txt"], in: dir.path, measuringMemory: true)
            #expect(exit.status == 0, "\(exit.stderr)")
            #expect(dir.contents("small.bin") == expectedBytes("small.bin"))
            let rss = try #require(exit.maxRSSKiB)
            #expect(rss < 64 * 1024, "peak RSS \(rss) KiB")
        }
    }

    @Test func inputLinesWithCRLFAndNULAndAFIFO() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let small = server.downloadURL("small.bin")
            // CRLF line ends, a comment, a blank line, a NUL in the middle of a line.
            let text = "# list\r\n\r\n  \(small)  \r\nhttp://h/a\u{0}b\r\n"
            _ = FileManager.default.createFile(atPath: dir.file("urls.txt"), contents: Data(text.utf8))
            let exit = try await HaulProcess.run(["-q", "-o", "crlf", "-i", "urls.txt"], in: dir.path)
            #expect(exit.status == 2, "the NUL line is a bad URL")
            #expect(dir.contents("crlf/small.bin") == expectedBytes("small.bin"))
            #expect(!exit.stderr.utf8.contains(0), "no raw NUL on the terminal")
            #expect(exit.stderr == "haul: ab: URL contains spaces or control characters (http://h/a\\x00b)\n")

            // stdin, and a FIFO as `-i <(command)` hands one over.
            let piped = try await HaulProcess.run(["-q", "-o", "stdin", "-i", "-"], in: dir.path, stdin: small + "\r\n")
            #expect(piped.status == 0, "\(piped.stderr)")
            #expect(dir.contents("stdin/small.bin") == expectedBytes("small.bin"))
            let fifo = dir.file("urls.fifo")
            #expect(mkfifo(fifo, 0o600) == 0)
            Thread.detachNewThread {
                let fd = open(fifo, O_WRONLY)
                for line in ["# first\n", small + "\r\n"] {
                    _ = Array(line.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                }
                close(fd)
            }
            let fromFIFO = try await HaulProcess.run(["-q", "-o", "fifo", "-i", "urls.fifo"], in: dir.path)
            #expect(fromFIFO.status == 0, "\(fromFIFO.stderr)")
            #expect(dir.contents("fifo/small.bin") == expectedBytes("small.bin"))
        }
    }

    // MARK: -O NAME

    @Test(arguments: ["../../x.bin", "sub/x.bin", "..", ".", "", "a\u{1b}b.bin", "/tmp/x.bin",
                      // Slashes that a combining mark or a prepended letter joins into one Character.
                      "../\u{301}x.bin", "b\u{0D4E}/x.bin"])
    func withAnOutputDirectoryTheOutputMustBeAPlainName(name: String) async throws {
        let dir = TempDirectory()
        #expect(mkdir(dir.file("a"), 0o755) == 0 && mkdir(dir.file("a/b"), 0o755) == 0)
        try await withSampleServer { server in
            let exit = try await HaulProcess.run(["-q", "-o", "out", "-O", name, server.downloadURL("small.bin")],
                                                 in: dir.file("a/b"))
            #expect(exit.status == 2, "\(exit.stderr)")
            #expect(exit.stderr.hasPrefix("haul: --output "), "\(exit.stderr)")
            #expect(exit.stderr.split(separator: "\n").count == 1, "\(exit.stderr)")
            #expect(!exit.stderr.utf8.contains(0x1B))
            #expect(dir.listing() == ["a"])
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("a/b")).isEmpty)
        }
    }

    @Test func withoutAnOutputDirectoryTheOutputIsAPath() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let exit = try await HaulProcess.run(["-O", "sub/dir/x.bin", server.downloadURL("small.bin")], in: dir.path)
            #expect(exit.status == 0, "\(exit.stderr)")
            #expect(exit.stdoutLines.first?.hasPrefix("x.bin: saving to sub/dir/x.bin ") == true, "\(exit.stdout)")
            #expect(dir.contents("sub/dir/x.bin") == expectedBytes("small.bin"))
            let plain = try await HaulProcess.run(["-q", "-o", "out", "-O", "y.bin", server.downloadURL("small.bin")],
                                                  in: dir.path)
            #expect(plain.status == 0, "\(plain.stderr)")
            #expect(dir.contents("out/y.bin") == expectedBytes("small.bin"))
            let trailing = try await HaulProcess.run(["-q", "-O", "sub/", server.downloadURL("small.bin")], in: dir.path)
            #expect(trailing.status == 2)
            #expect(trailing.stderr.hasPrefix("haul: --output "), "\(trailing.stderr)")
        }
    }

    // MARK: international host names

    @Test func anInternationalHostNameIsFetchedLikeCurlDoes() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            // curl resolves every *.localhost name to the loopback address, after converting it with libidn2.
            let url = "http://bücher.localhost:\(server.port)/files/download?small.bin"
            let exit = try await HaulProcess.run(["-q", "--retries", "0", url], in: dir.path)
            #expect(exit.status == 0, "\(exit.stderr)")
            #expect(dir.contents("small.bin") == expectedBytes("small.bin"))
        }
    }

    // MARK: control characters meant for the terminal

    @Test func controlCharactersNeverReachTheTerminalRaw() async throws {
        let dir = TempDirectory()
        let hostile = "http://127.0.0.1:1/\u{1b}]0;pwned\u{07}x.bin"
        let exit = try await HaulProcess.run(["--retries", "0", hostile], in: dir.path)
        #expect(exit.status == 2)
        #expect(!exit.stderr.utf8.contains(0x1B), "raw ESC in \(exit.stderr.debugDescription)")
        #expect(!exit.stderr.utf8.contains(0x07), "raw BEL in \(exit.stderr.debugDescription)")
        #expect(exit.stderr.contains("\\x1b]0;pwned\\x07"), "\(exit.stderr)")

        // The same through -i, and in an option value that the argument parser echoes.
        _ = FileManager.default.createFile(atPath: dir.file("urls.txt"), contents: Data((hostile + "\n").utf8))
        let listed = try await HaulProcess.run(["--retries", "0", "-i", "urls.txt"], in: dir.path)
        #expect(listed.status == 2)
        #expect(!listed.stderr.utf8.contains(0x1B), "raw ESC in \(listed.stderr.debugDescription)")
        let option = try await HaulProcess.run(["-j", "\u{1b}[2J\u{202E}", hostile], in: dir.path)
        #expect(option.status == 2)
        #expect(!option.stderr.utf8.contains(0x1B), "raw ESC in \(option.stderr.debugDescription)")
        #expect(!option.stderr.contains("\u{202E}"), "raw RLO in \(option.stderr.debugDescription)")
    }

    // MARK: SIGTERM and SIGHUP

    @Test(arguments: [(SIGTERM, Int32(143)), (SIGHUP, Int32(129))])
    func aStopSignalCheckpointsAndTheNextRunResumes(signal: Int32, status: Int32) async throws {
        let dir = TempDirectory()
        let name = "medium.bin"
        try await withSampleServer(rate: 2 << 20) { server in
            let url = server.downloadURL(name)
            // 20 MiB at 2 MiB/s: 10 s, stopped once a checkpoint is on disk and a third has arrived.
            let process = try HaulProcess(["--plain", url], in: dir.path)
            let state = dir.file(name + ".part.json")
            try await waitForFiles(in: dir.path, state, within: .seconds(20)) {
                FileManager.default.fileExists(atPath: state)
            }
            let progress = try await within(20, "a third of the file") {
                await process.firstLine { line in
                    guard let match = line.firstMatch(of: /^medium\.bin  (\d+)%/) else { return false }
                    return (Int(match.1) ?? 0) >= 30
                }
            }
            #expect(progress != nil)
            process.send(signal)
            let exit = await process.wait()
            #expect(exit.signal == nil, "ended by the signal itself: \(exit.stderr)")
            #expect(exit.status == status, "\(exit.stderr)")
            #expect(exit.stderr == "haul: \(name): interrupted (\(url))\n")
            #expect(FileManager.default.fileExists(atPath: dir.file(name + ".part")))
            #expect(FileManager.default.fileExists(atPath: dir.file(name + ".part.json")))
            #expect(!FileManager.default.fileExists(atPath: dir.file(name)))

            server.setRate(nil)
            // The first run's bodies end (its connections closed with it) before the count starts again, so a
            // throttled sender's last write to a closed connection is not counted as the second run's.
            await server.waitUntilNoBodies()
            server.resetStats()
            let again = try await HaulProcess.run(["-q", url], in: dir.path)
            #expect(again.status == 0, "\(again.stderr)")
            #expect(try FileDigest.hex(of: dir.file(name)) == expectedSHA256(name))
            let sent = server.stats.bodyBytesSent
            print("after \(signal == SIGTERM ? "SIGTERM" : "SIGHUP"): the second run fetched \(sent) of \(20 << 20) bytes")
            // The stop's own checkpoint kept at least the third seen before it.
            #expect(sent <= (20 << 20) * 7 / 10, "the second run fetched \(sent) bytes")
            #expect(dir.listing() == [name])
        }
    }
}
