import Foundation
import HaulCore
import SampleServer
import TestSupport
import Testing

/// A finished file is durable before it takes its name (fsync of the data, then of the directory after the
/// rename); `--no-sync` gives it its name without either, as curl and wget do. Counted by strace, on the real
/// binary.
@Suite struct SyncTests {
    /// The syncs haul made on the output directory and the files in it, as strace's `-y` names their
    /// descriptors: "fsync(12</tmp/.../small.bin.part>) = 0".
    func syncs(downloading name: String, extra: [String], server: SampleServer, dir: TempDirectory)
        async throws -> (status: Int32, stderr: String, calls: [String])
    {
        let trace = dir.file("trace")
        let out = dir.file("out")
        let exit = try await HaulProcess.run(
            ["--plain", "-q", "-o", out] + extra + [server.downloadURL(name)], in: dir.path,
            wrapper: ["/usr/bin/strace", "-f", "-qq", "-y", "-e", "trace=fsync,fdatasync,sync_file_range,syncfs",
                      "-o", trace])
        let calls = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").map(String.init)
            .filter { $0.contains("<\(out)") }
        return (exit.status, exit.stderr, calls)
    }

    @Test func aFinishedFileIsSyncedBeforeItsNameAndTheDirectoryAfter() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let run = try await syncs(downloading: "small.bin", extra: [], server: server, dir: dir)
            #expect(run.status == 0, "\(run.stderr)")
            let out = dir.file("out")
            #expect(run.calls.contains { $0.contains("fsync(") && $0.contains("<\(out)/small.bin.part>") },
                    "\(run.calls)")
            #expect(run.calls.contains { $0.contains("fsync(") && $0.contains("<\(out)>") }, "\(run.calls)")
            #expect(try FileDigest.hex(of: dir.file("out/small.bin")) == expectedSHA256("small.bin"))
        }
    }

    /// On the command line, or as `no-sync = true` in a config file.
    @Test(arguments: [false, true])
    func noSyncNamesTheFileWithoutWaitingForTheDisk(fromConfig: Bool) async throws {
        let dir = TempDirectory()
        let config = dir.file("haul.toml")
        try "no-sync = true\n".write(toFile: config, atomically: true, encoding: .utf8)
        chmod(config, 0o600)
        try await withSampleServer { server in
            let extra = fromConfig ? ["--config", config] : ["--no-sync"]
            let run = try await syncs(downloading: "small.bin", extra: extra, server: server, dir: dir)
            #expect(run.status == 0, "\(run.stderr)")
            // Only the finish fsyncs the part and the directory. (A download slowed past its first second
            // would also checkpoint: an fdatasync of the part and an fsync of the state's temporary, which
            // --no-sync keeps.)
            let out = dir.file("out")
            let finishSyncs = run.calls.filter {
                $0.contains("fsync(") && ($0.contains("<\(out)/small.bin.part>") || $0.contains("<\(out)>"))
            }
            #expect(finishSyncs.isEmpty, "\(run.calls)")
            #expect(!run.calls.contains { $0.contains("syncfs(") || $0.contains("sync_file_range(") }, "\(run.calls)")
            #expect(try FileDigest.hex(of: dir.file("out/small.bin")) == expectedSHA256("small.bin"))
            #expect(dir.listing() == ["haul.toml", "out", "trace"])
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("out")) == ["small.bin"])
        }
    }
}
