import Foundation
import SampleServer
import TestSupport
import Testing
@testable import HaulCore

/// Crash resume keeps what reached the file: kill -9 early and often costs a few percent, not a restart of
/// each run's first second (the cost bounds below; the repair of a damaged part is CrashRepairTests).
///
/// `make test` runs this suite alone, after the rest: its bounds count the bytes a server sent against kills at
/// wall-clock moments, and beside other tests on two cores the killed process is starved of its last writes
/// (the bytes the kernel holds for it at each kill grow with the load, not with anything haul does).
@Suite struct CrashResumeTests {
    /// 50 MiB served at 5 MB/s per connection (the loop; peers: curl -C - 1.01x, aria2c 1.59x/2.71x).
    static let file = GeneratedFile(name: "fifty.bin", size: 50 << 20)
    static let configuration: SampleServerConfiguration = {
        var configuration = SampleServerConfiguration(port: 0, rate: 5_000_000, files: [file], jpegs: false)
        // Paced in 1/100 s pieces: a killed client has little on its way, as from a real server's socket writes.
        configuration.chunksPerSecond = 100
        return configuration
    }()

    static func expected() -> String { expectedSHA256(of: file) }

    @Test(arguments: [(1, 1.05), (4, 1.10)])
    func tenKillsEarlyInEachRunCostAFewPercent(segments: Int, bound: Double) async throws {
        let dir = TempDirectory()
        try await withSampleServer(Self.configuration) { (server) async throws in
            let arguments = ["--plain", "-q", "-s", String(segments), server.downloadURL(Self.file.name)]
            // With four connections the file may be done before ten kills.
            let (delays, finished) = try await killRepeatedly(arguments, in: dir, file: Self.file.name,
                                                              at: 300...1000, server: server)
            // The next run, as a user would make it: unless the last one ended by itself, or was killed after it
            // was all done. A kill between the file taking its name and its state going leaves the state: the
            // next run finds the file whole, fetches nothing and removes it (FinishedEarlierTests).
            if !finished || FileManager.default.fileExists(atPath: dir.file(Self.file.name + ".part.json")) {
                let last = try await HaulProcess.run(arguments, in: dir.path)
                #expect(last.status == 0, "\(last.stderr)")
            }
            #expect(try FileDigest.hex(of: dir.file(Self.file.name)) == Self.expected())
            #expect(dir.listing() == [Self.file.name])
            let ratio = Double(server.stats.bodyBytesSent) / Double(Self.file.size)
            print("kill -9 at 0.3-1.0 s x\(delays.count), -s \(segments): the server sent \(ratio)x the file")
            // Under a sanitizer haul runs several times slower and holds more in memory at each kill: the cost
            // is the plain run's to check (as memory bounds are); the file must be right either way.
            if !TestEnvironment.sanitized {
                #expect(ratio <= bound, "the server sent \(ratio)x the file; kill delays \(delays) ms")
            }
        }
    }
}

/// Runs `haul ARGS` in `dir` and SIGKILLs it at a random moment in `moments` (ms), ten times or until a run
/// ends by itself or `file` took its name (a kill may come just after). Returns the moments and whether the
/// file is done. Waits after each kill until the server has seen the connections go, so its count is final.
func killRepeatedly(_ arguments: [String], in dir: TempDirectory, file: String, at moments: ClosedRange<Int>,
                    server: SampleServer) async throws -> (delays: [Int], finished: Bool) {
    var delays: [Int] = []
    for _ in 0..<10 {
        let process = try HaulProcess(arguments, in: dir.path)
        let delay = Int.random(in: moments)
        delays.append(delay)
        try await Task.sleep(for: .milliseconds(delay))  // the moment to kill at, not synchronisation
        process.send(SIGKILL)
        let exit = await process.wait()
        await server.waitUntilNoBodies()
        if exit.signal == nil { #expect(exit.status == 0, "\(exit.stderr)") }
        if exit.signal == nil || FileManager.default.fileExists(atPath: dir.file(file)) { return (delays, true) }
    }
    return (delays, false)
}
