import Foundation
import HaulCore
import SampleServer
import TestSupport
import Testing

/// What one download costs the file system besides its bytes, counted by strace on the real binary: with
/// a thousand small files these calls are a good part of the run. Each is asked of the kernel once; what
/// haul already knows (the directory it opened, the part it created and locked) is not asked again.
@Suite struct PerFileCallsTests {
    @Test func theOutputDirectoryAndThePartAreLookedAtOnce() async throws {
        let dir = TempDirectory()
        let out = dir.file("out")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)
        try await withSampleServer { server in
            let trace = dir.file("trace")
            let exit = try await HaulProcess.run(
                ["--plain", "-q", "-o", out, server.downloadURL("small.bin")], in: dir.path,
                // A file per thread (`-ff`): with one file, a call another thread's call interrupts is split
                // into "<unfinished ...>" and "<... resumed>" lines, and its result is not on its own line (CI
                // under load split the part's openat so).
                wrapper: ["/usr/bin/strace", "-ff", "-qq", "-y", "-e", "trace=%stat,%fstat,access,faccessat,faccessat2,openat",
                          "-o", trace])
            #expect(exit.status == 0, "\(exit.stderr)")
            #expect(try FileDigest.hex(of: dir.file("out/small.bin")) == expectedSHA256("small.bin"))
            let traces = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("trace.") }
            let calls = try traces.flatMap { try String(contentsOfFile: dir.file($0), encoding: .utf8).split(separator: "\n") }
                .map(String.init).filter { $0.contains(out) }
            // The directory is opened and its descriptor asked (fstat), not looked up (stat, access) by path first.
            let byPath = calls.filter { $0.contains("\"\(out)\"") && !$0.contains("openat(") }
            #expect(byPath.isEmpty, "\(calls)")
            // The part's descriptor is asked once, when it is claimed (locked): its size and identity then
            // serve the resume decision, the first body, the direct-I/O descriptor and the rename's check.
            let claim = try #require(calls.first { $0.contains("\"small.bin.part\", O_RDWR|O_CREAT|O_EXCL") },
                                     "\(calls)")
            let descriptor = try #require(claim.firstMatch(of: /= (\d+)</)?.1, "\(claim)")
            let partStats = calls.filter { $0.contains("fstat") && $0.contains("(\(descriptor)<\(out)/small.bin.part>") }
            #expect(partStats.count == 1, "\(calls)")
        }
    }
}
