import Foundation
import HaulCore
import SampleServer
import TestSupport
import Testing

/// A limit on the size of the files a process may write (`ulimit -f`, RLIMIT_FSIZE) is a full disk as far as
/// a download goes: the write that crosses it fails ("File too large", haul ignores SIGXFSZ) and the download
/// fails with the local file I/O code, one line on stderr, its part kept to resume when it holds bytes. The
/// limit is also the one way to run out of room that a test can set up without a file system of its own, so
/// these check what a full disk does to each way of writing.
@Suite struct FileSizeLimitTests {
    /// 20 MiB against a limit of 8 MiB.
    static let name = "medium.bin"
    static let limit = 8 << 20

    /// haul under `prlimit --fsize`: the limit holds for it and for what it starts.
    func run(_ arguments: [String], in dir: TempDirectory, limited: Bool) async throws -> HaulProcess.Exit {
        try await HaulProcess.run(["--plain", "-q", "--retries", "0"] + arguments, in: dir.path,
                                  wrapper: limited ? ["/usr/bin/prlimit", "--fsize=\(Self.limit)", "--"] : [])
    }

    /// One connection writes up to the limit, fails there with exit 3 and a line that says why, and keeps
    /// what it wrote: the next run, without the limit, fetches only the rest.
    @Test func oneConnectionStopsAtTheLimitAndResumesAfterIt() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let url = server.downloadURL(Self.name)
            let limited = try await run([url], in: dir, limited: true)
            #expect(limited.status == FailureCategory.fileIO.exitCode, "status \(limited.status): \(limited.stderr)")
            let lines = limited.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].contains("File too large"), "\(limited.stderr)")
            let kept = (try? FileManager.default.attributesOfItem(atPath: dir.file(Self.name + ".part"))[.size])
                as? Int ?? 0
            #expect(kept > 0 && kept <= Self.limit, "part of \(kept) bytes")
            #expect(!dir.listing().contains(Self.name))

            server.resetStats()
            let after = try await run([url], in: dir, limited: false)
            #expect(after.status == 0, "\(after.stderr)")
            #expect(try FileDigest.hex(of: dir.file(Self.name)) == expectedSHA256(Self.name))
            let size = Int64(generatedFile(Self.name).size)
            #expect(server.stats.bodyBytesSent <= size - Int64(Self.limit) / 2,
                    "the second run fetched \(server.stats.bodyBytesSent) of \(size) bytes")
        }
    }

    /// Several connections reserve the blocks ahead of their writes: the reservation crosses the limit
    /// before a byte is written, and the download fails at once with exit 3, leaving no part that holds
    /// nothing but a reservation.
    @Test func segmentsFailAtTheirReservationAndLeaveNothing() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let limited = try await run(["-s", "4", server.downloadURL(Self.name)], in: dir, limited: true)
            #expect(limited.status == FailureCategory.fileIO.exitCode, "status \(limited.status): \(limited.stderr)")
            let lines = limited.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].contains("cannot reserve") && lines[0].contains("File too large"),
                    "\(limited.stderr)")
            #expect(!dir.listing().contains { $0.hasPrefix(Self.name) }, "\(dir.listing())")
        }
    }
}
