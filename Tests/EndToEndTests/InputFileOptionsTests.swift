import Foundation
import HaulCore
import SampleServer
import Testing
import TestSupport

/// `-i FILE` with aria2's per-URL options: indented `key=value` lines under a URL.
@Suite struct InputFileOptionsTests {
    @Test func eachURLTakesItsOwnOptions() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let small = server.downloadURL("small.bin")
            let medium = server.downloadURL("medium.bin")
            let digest = expectedSHA256("small.bin")
            let list = """
                # aria2's input format
                \(small)
                  out=renamed.bin
                  dir=elsewhere
                  checksum=sha-256=\(digest)
                \(medium)\thttp://mirror.invalid/medium.bin
                \tsegments=4
                \theader=X-Haul-Test: 1
                \tlimit-rate=64M
                \(small)
                  checksum=sha256=\(String(repeating: "0", count: 64))

                """
            let run = try await HaulProcess.run(["--plain", "-o", "dl", "-i", "-"], in: dir.path, stdin: list)
            #expect(run.status == 9, "the third one's checksum is wrong: \(run.stderr)")
            #expect(dir.contents("elsewhere/renamed.bin") == expectedBytes("small.bin"))
            #expect(try FileDigest.hex(of: dir.file("dl/medium.bin")) == expectedSHA256("medium.bin"))
            #expect(!FileManager.default.fileExists(atPath: dir.file("dl/small.bin")), "a wrong checksum names nothing")
            #expect(run.stderr.contains("small.bin") && run.stderr.contains("checksum"), "\(run.stderr)")
        }
    }

    @Test(arguments: [
        ("http://127.0.0.1:1/a.bin\n  bogus=1\n", "haul: -: line 2: unknown option 'bogus' (out, dir, segments, sequential, header, checksum, limit-rate, user-agent, referer)"),
        ("  out=x.bin\nhttp://127.0.0.1:1/a.bin\n", "haul: -: line 1: an option (an indented line) before any URL"),
        ("http://127.0.0.1:1/a.bin\n  out=../x.bin\n", "haul: -: line 2: out=../x.bin: is a path, not a file name"),
        ("http://127.0.0.1:1/a.bin\n  out=../\u{301}x\n", "haul: -: line 2: out=../\u{301}x: is a path, not a file name"),
        ("http://127.0.0.1:1/a.bin\n  segments=99\n", "haul: -: line 2: segments=99: from 1 to 16"),
        ("http://127.0.0.1:1/a.bin\n  outdir\n", "haul: -: line 2: 'outdir' is not key=value"),
    ])
    func aBadOptionLineStopsTheRunBeforeAnything(list: String, expected: String) async throws {
        let dir = TempDirectory()
        let run = try await HaulProcess.run(["--plain", "-i", "-"], in: dir.path, stdin: list)
        #expect(run.status == 2)
        #expect(run.stderr == expected + "\n")
        #expect(dir.listing().isEmpty)
    }
}
