import Foundation
import SampleServer
import TestSupport
import Testing
@testable import HaulCore

/// A run stopped (kill -9, a power loss) after its file took its name and before its state file went
/// (`Claim.place` renames, then removes the state): the next run of the URL finds the file whole, removes
/// what the stopped run left and fetches nothing. (It went on to `NAME.1` and fetched the whole file again,
/// leaving `NAME.part.json` for ever: CrashResumeTests caught it once, a kill in that window.)
@Suite struct FinishedEarlierTests {
    enum Leftover: String, CaseIterable, CustomTestStringConvertible {
        case thisRunsState, anotherURLsState, aShorterFile, anotherTime, aLinkAtTheName, aDownloadStillNamingIt
        var testDescription: String { rawValue }
    }

    /// `medium.bin` downloaded whole, then what a run stopped in that window leaves beside it: its state
    /// (as of its last checkpoint, short of the end) and its journal.
    func stoppedAfterNaming(_ server: SampleServer, _ dir: TempDirectory, url: String? = nil) async throws {
        let (first, _) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir))
        #expect(try first.get().path == dir.file("medium.bin"))
        let head = try await CurlDriver.shared.start(HTTPRequest(url: server.downloadURL("medium.bin"), method: .head)).head()
        try ResumeState(url: url ?? server.downloadURL("medium.bin"), etag: head["ETag"],
                        lastModified: head["Last-Modified"], total: 20 << 20, completed: [ByteRange(0, 16 << 20)])
            .save(to: dir.file("medium.bin.part.json"))
        _ = FileManager.default.createFile(atPath: dir.file("medium.bin.part.journal"), contents: Data(repeating: 1, count: 64))
        server.resetStats()
    }

    /// With the default policy (the next free name) and with `--skip-existing`; `--overwrite` fetches the file
    /// again, as it asks.
    @Test(arguments: [ExistingFilePolicy.rename, .skip])
    func theNextRunFindsTheFileWholeAndFetchesNothing(policy: ExistingFilePolicy) async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            try await stoppedAfterNaming(server, dir)
            var job = DownloadJob.sample(server, "medium.bin", dir)
            job.existingFile = policy
            let (result, facts) = await runQuickly(job)
            let done = try result.get()
            #expect(done.path == dir.file("medium.bin") && !done.skipped && done.bytes == 0)
            #expect(facts == [.finishedEarlier(file: "medium.bin")])
            #expect(server.stats.requests == 0)
            #expect(dir.listing() == ["medium.bin"])
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }

    /// Anything short of that is not taken for it: the file stays, the state stays, and the download takes
    /// the next free name as before.
    @Test(arguments: Leftover.allCases.filter { $0 != .thisRunsState })
    func aFileThatIsNotTheStoppedRunsIsLeftAlone(leftover: Leftover) async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            try await stoppedAfterNaming(server, dir, url: leftover == .anotherURLsState ? "http://elsewhere/medium.bin" : nil)
            let path = dir.file("medium.bin")
            var holder: Int32 = -1
            switch leftover {
            case .aShorterFile: #expect(truncate(path, 10 << 20) == 0)
            case .anotherTime:
                var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
                #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
            case .aLinkAtTheName:
                try FileManager.default.moveItem(atPath: path, toPath: dir.file("elsewhere.bin"))
                try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "elsewhere.bin")
            case .aDownloadStillNamingIt:
                // A running download of the same URL between its rename and its state's removal holds the file
                // (its part's lock, on the inode the name now has): not a stopped run's. (40 downloads of one
                // URL at -j 16 ended with 39 files, one taking another's for its own, under the sanitizer.)
                holder = open(path, O_RDONLY | O_CLOEXEC)
                #expect(holder >= 0 && flock(holder, LOCK_EX) == 0)
            case .thisRunsState, .anotherURLsState: break
            }
            defer { if holder >= 0 { close(holder) } }
            let state = try Data(contentsOf: URL(fileURLWithPath: dir.file("medium.bin.part.json")))
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "medium.bin", dir))
            #expect(try result.get().path == dir.file("medium.1.bin"))
            #expect(!facts.contains(.finishedEarlier(file: "medium.bin")))
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("medium.bin.part.json"))) == state)
            #expect(try FileDigest.hex(of: dir.file("medium.1.bin")) == expectedSHA256("medium.bin"))
        }
    }
}
