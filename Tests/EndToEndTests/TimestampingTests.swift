import Foundation
import HaulCore
import SampleServer
import Testing
import TestSupport

/// `-N` and the server's time on the file.
@Suite struct TimestampingTests {
    static func mtime(_ path: String) throws -> Int {
        var info = stat()
        try #require(stat(path, &info) == 0)
        return info.st_mtim.tv_sec
    }

    @Test func aCurrentFileIsKeptOn304AndANewerOneReplacesIt() async throws {
        let dir = TempDirectory()
        let log = LockedLines()
        var configuration = SampleServerConfiguration(port: 0, jpegs: false, requestLog: { log.append($0) })
        configuration.files = GeneratedFile.standardSet
        try await withSampleServer(configuration) { server in
            let url = server.downloadURL("small.bin")
            let path = dir.file("small.bin")
            let first = try await HaulProcess.run(["--plain", url], in: dir.path)
            #expect(first.status == 0, "\(first.stderr)")
            // The server's Last-Modified became the file's mtime.
            let served = try Self.mtime(path)
            #expect(served < Int(Date().timeIntervalSince1970) - 3600, "the sample files are dated long ago")

            let again = try await HaulProcess.run(["--plain", "-N", url], in: dir.path)
            #expect(again.status == 0, "\(again.stderr)")
            #expect(again.stdoutLines.first == "small.bin: not modified on the server, kept (./small.bin)", "\(again.stdout)")
            #expect(log.snapshot.contains { $0.contains("If-Modified-Since") && $0.hasSuffix("-> 304") }, "\(log.snapshot)")
            #expect(dir.listing() == ["small.bin"], "no copy, no part left")

            // The server's copy changes (newer Last-Modified): -N fetches it and replaces the file.
            var faults = SampleServerFaults()
            faults.etagSalt = "v2"
            server.setFaults(faults)
            try Data("stale".utf8).write(to: URL(fileURLWithPath: path))
            var old = [timespec(tv_sec: served, tv_nsec: 0), timespec(tv_sec: served, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, path, &old, 0) == 0)
            let newer = try await HaulProcess.run(["--plain", "-N", url], in: dir.path)
            #expect(newer.status == 0, "\(newer.stderr)")
            #expect(dir.contents("small.bin") == expectedBytes("small.bin"), "replaced by the server's copy")
            #expect(dir.listing() == ["small.bin"])
            #expect(try Self.mtime(path) > served)

            // --no-remote-time: the mtime is when it was written.
            let now = try await HaulProcess.run(["--plain", "--no-remote-time", "-o", "fresh", url], in: dir.path)
            #expect(now.status == 0)
            #expect(try Self.mtime(dir.file("fresh/small.bin")) >= Int(Date().timeIntervalSince1970) - 600)

            // Without -N an existing file is left alone as before (the next free name).
            let plain = try await HaulProcess.run(["--plain", url], in: dir.path)
            #expect(plain.status == 0)
            #expect(dir.listing().contains("small.1.bin"))
        }
    }
}
