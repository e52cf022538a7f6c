import Foundation
import HaulCore
import SampleServer
import TestSupport
import Testing

/// kill -9 at random moments, then the same command: the file must come out byte-identical, and the
/// checkpoints must spare most of the re-downloading (peers measured in the issue: curl -C - 1.01x,
/// aria2c -x1 1.53x, aria2c -x4 1.75x, axel -n4 3.2x).
@Suite struct CrashTests {
    @Test(arguments: [1, 4])
    func tenKillsThenACompletedByteIdenticalFile(segments: Int) async throws {
        let dir = TempDirectory()
        // 8 MiB/s in all: a run lives 1 to 2 s, so ten of them cover half the file or more.
        try await withSampleServer(rate: (8 << 20) / segments) { (server) async throws in
            let arguments = ["--plain", "-q", "-s", String(segments), server.downloadURL("large.bin")]
            let (delays, finished) = try await killRepeatedly(arguments, in: dir, file: "large.bin", at: 1000...2000,
                                                              server: server)
            #expect(!finished, "the run ended by itself before the kill; delays \(delays)")
            let last = try await HaulProcess.run(arguments, in: dir.path)
            #expect(last.status == 0, "\(last.stderr)")
            #expect(try FileDigest.hex(of: dir.file("large.bin")) == expectedSHA256("large.bin"))
            #expect(dir.listing() == ["large.bin"])
            let ratio = Double(server.stats.bodyBytesSent) / Double(200 << 20)
            print("kill -9 x10, -s \(segments): the server sent \(ratio)x the file")
            #expect(ratio <= 1.3, "the server sent \(ratio)x the file; kill delays \(delays) ms")
        }
    }
}
