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
    /// 24 descriptors allowed, the hard limit left as it is: 16 downloads at once need about 100.
    @Test func aLowSoftLimitIsRaisedToTheHardOne() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let urls = Array(repeating: server.downloadURL("small.bin"), count: 40)
            let exit = try await HaulProcess.run(["--plain", "-q", "--retries", "0", "-j", "16"] + urls,
                                                 in: dir.path, wrapper: ["/usr/bin/prlimit", "--nofile=24:", "--"])
            #expect(exit.status == 0, "\(exit)")
            #expect(exit.stderr.isEmpty, "\(exit.stderr)")
            #expect(dir.listing().filter { !$0.contains(".part") }.count == 40, "\(dir.listing())")
        }
    }

    /// A hard limit too low for `-j 16` (24 descriptors: about one download's worth beside what haul holds
    /// anyway): the downloads take turns instead of failing, and the process is not ended by the runtime
    /// (it was, with SIGILL, in two of three runs before). A single download asking for more connections than
    /// the limit leaves room for gets fewer.
    @Test func aLowHardLimitMakesDownloadsTakeTurns() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let urls = Array(repeating: server.downloadURL("small.bin"), count: 40)
            let exit = try await HaulProcess.run(["--plain", "-q", "--retries", "0", "-j", "16"] + urls,
                                                 in: dir.path, wrapper: ["/usr/bin/prlimit", "--nofile=24:24", "--"])
            #expect(exit.status == 0, "\(exit)")
            #expect(exit.stderr.isEmpty, "\(exit.stderr)")
            #expect(dir.listing().filter { !$0.contains(".part") }.count == 40, "\(dir.listing())")

            let one = TempDirectory()
            let segmented = try await HaulProcess.run(
                ["--plain", "-q", "--retries", "0", "-s", "16", server.downloadURL("medium.bin")],
                in: one.path, wrapper: ["/usr/bin/prlimit", "--nofile=24:24", "--"])
            #expect(segmented.status == 0, "\(segmented)")
            #expect(try FileDigest.hex(of: one.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }
}
