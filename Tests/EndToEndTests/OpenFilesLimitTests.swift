import Foundation
import HaulCore
import SampleServer
import TestSupport
import Testing

/// The limit on open files (`ulimit -n`, RLIMIT_NOFILE). Most systems start programs with a soft limit of
/// 1024 under a hard one hundreds of times that; `-j 64 -s 16` needs more than 1024 descriptors (a
/// download holds its directory, its part twice, its journal and a socket per connection). haul raises
/// the soft limit to the hard one when it starts, as Go programs do, so a limit nobody chose for it does
/// not fail its downloads with "Too many open files", or end it: Swift's runtime (libdispatch) stops the
/// process with SIGILL when it cannot open a file of /proc it reads now and then.
@Suite struct OpenFilesLimitTests {
    /// haul ARGS under `prlimit --nofile=LIMIT` (soft:hard, or soft: for the soft limit alone).
    func run(_ arguments: [String], limit: String, in dir: TempDirectory) async throws -> HaulProcess.Exit {
        try await HaulProcess.run(["--plain", "-q", "--retries", "0"] + arguments, in: dir.path,
                                  wrapper: ["/usr/bin/prlimit", "--nofile=\(limit)", "--"])
    }

    /// 40 copies of one small file at `-j 16`: all of them, exit 0, nothing said.
    func expectFortyDone(limit: String, _ server: SampleServer) async throws {
        let dir = TempDirectory()
        let exit = try await run(["-j", "16"] + Array(repeating: server.downloadURL("small.bin"), count: 40),
                                 limit: limit, in: dir)
        #expect(exit.status == 0, "\(exit)")
        #expect(exit.stderr.isEmpty, "\(exit.stderr)")
        #expect(dir.listing().filter { !$0.contains(".part") }.count == 40, "\(dir.listing())")
    }

    /// 24 descriptors allowed, the hard limit left as it is: 16 downloads at once need about 100.
    @Test func aLowSoftLimitIsRaisedToTheHardOne() async throws {
        try await withSampleServer { server in try await expectFortyDone(limit: "24:", server) }
    }

    /// A hard limit too low for `-j 16` (24 descriptors: about one download's worth beside what haul holds
    /// anyway): the downloads take turns instead of failing, and the process is not ended by the runtime
    /// (it was, with SIGILL, in two of three runs before). A single download asking for more connections than
    /// the limit leaves room for gets fewer.
    @Test func aLowHardLimitMakesDownloadsTakeTurns() async throws {
        try await withSampleServer { server in
            try await expectFortyDone(limit: "24:24", server)
            let one = TempDirectory()
            let segmented = try await run(["-s", "16", server.downloadURL("medium.bin")], limit: "24:24", in: one)
            #expect(segmented.status == 0, "\(segmented)")
            #expect(try FileDigest.hex(of: one.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }
}
