import Foundation
import NIOConcurrencyHelpers
import SampleServer
import TestSupport
import Testing
@testable import HaulCore

/// A stopped download given a new address (`DownloadManager.refresh`, `SameFileCheck`), and `--refresh-with`'s
/// command (`RefreshCommand`), in process against the sample server.
@Suite struct SameFileTests {
    static let size = 20 << 20

    static func configuration(_ log: NIOLockedValueBox<[String]>) -> SampleServerConfiguration {
        var configuration = SampleServerConfiguration(port: 0, jpegs: false, requestLog: { line in
            log.withLockedValue { $0.append(line) }
        })
        configuration.files = [GeneratedFile(name: "medium.bin", size: size), GeneratedFile(name: "twin.bin", size: size),
                                GeneratedFile(name: "small.bin", size: 1 << 20)]
        return configuration
    }

    @Test func aPausedDownloadContinuesFromItsBytesAtAnotherAddressOfTheSameFile() async throws {
        let dir = TempDirectory()
        let log = NIOLockedValueBox<[String]>([])
        try await withSampleServer(Self.configuration(log)) { server in
            var faults = SampleServerFaults()
            faults.holdAt = [4 << 20]
            server.setFaults(faults)
            let manager = DownloadManager(concurrency: 1)
            let first = server.baseURL + server.signedPath("medium.bin", expires: Int64.max / 2)
            let id = await manager.add(DownloadJob(url: first, outputDirectory: dir.path))
            await server.waitUntilHeld()
            // Its bytes are coming (the server may hold before haul has taken the answer's head).
            try await within(30, "the download to be under way") {
                for await event in manager.events where event == .state(id: id, .downloading) { return }
            }
            await manager.pause(id)
            await manager.waitUntilStopped([id])
            server.release()
            let statePath = dir.file("medium.bin.part.json")
            let stateBefore = try Data(contentsOf: URL(fileURLWithPath: statePath))
            guard case .found(let state) = ResumeState.load(from: statePath), let offset = state.completed.first?.end else {
                Issue.record("no resume state")
                return
            }

            // Another size, then the same size with other bytes: refused, the state as it was.
            let small = server.downloadURL("small.bin")
            guard case .failure(let larger) = await manager.refresh(id, to: small) else {
                Issue.record("another size was taken")
                return
            }
            #expect(larger.message == "\(small) serves another file: 1048576 bytes, not \(Self.size)")
            #expect(larger.category == .usage)
            guard case .failure(let twin) = await manager.refresh(id, to: server.downloadURL("twin.bin")) else {
                Issue.record("other bytes were taken")
                return
            }
            #expect(twin.message.hasPrefix("\(server.downloadURL("twin.bin")) serves another file: other bytes at 0-"))
            #expect(try Data(contentsOf: URL(fileURLWithPath: statePath)) == stateBefore)
            #expect(await manager.state(of: id) == .paused)

            // The same file at another address: queued at once, continued from the part with a Range request.
            let other = server.downloadURL("medium.bin")
            #expect(await manager.refresh(id, to: other) == .success(offset))
            await manager.waitUntilIdle()
            #expect(await manager.state(of: id) == .done)
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256(of: GeneratedFile(name: "medium.bin", size: Self.size)))
            #expect(log.withLockedValue { $0 }.contains("GET medium.bin bytes=\(offset)- -> 206 (\(Int64(Self.size) - offset) bytes)"))
            let job = await manager.job(of: id)
            #expect(job?.url == other && job?.originURL == first && job?.origin == first)
        }
    }

    @Test func aRunningOrUnknownDownloadIsRefused() async throws {
        let dir = TempDirectory()
        let log = NIOLockedValueBox<[String]>([])
        try await withSampleServer(Self.configuration(log)) { server in
            var faults = SampleServerFaults()
            faults.holdAt = [1 << 20]
            server.setFaults(faults)
            let manager = DownloadManager(concurrency: 1)
            let id = await manager.add(DownloadJob(url: server.downloadURL("medium.bin"), outputDirectory: dir.path))
            await server.waitUntilHeld()
            #expect(await manager.refresh(id, to: server.downloadURL("medium.bin"))
                == .failure(HaulError(.usage, "download 1 is running; pause it first")))
            #expect(await manager.refresh(7, to: server.downloadURL("medium.bin"))
                == .failure(HaulError(.usage, "no download with id 7")))
            server.release()
            await manager.waitUntilIdle()
        }
    }

    /// The block compared: a journal record inside the durable ranges (its hash known), else the first 64 KiB
    /// of the first completed range, else none (the size alone).
    @Test func theBlockComesFromTheJournalWhereItCan() {
        let state = ResumeState(url: "http://h/f", etag: nil, lastModified: nil, total: 10 << 20,
                                completed: [ByteRange(0, 3 << 20)])
        let inside = WriteJournal.Record(offset: 1 << 20, length: 1 << 20, hash: 42)
        let past = WriteJournal.Record(offset: 3 << 20, length: 1 << 20, hash: 7)
        #expect(SameFileCheck.block(of: state, journal: [past, inside]).range == inside.range)
        #expect(SameFileCheck.block(of: state, journal: [past, inside]).hash == 42)
        #expect(SameFileCheck.block(of: state, journal: [past]).range == ByteRange(0, 64 << 10))
        #expect(SameFileCheck.block(of: state, journal: [past]).hash == nil)
        var empty = state
        empty.completed = []
        #expect(SameFileCheck.block(of: empty, journal: []).range == nil)
    }

    @Test func placeholdersFillWordsAndAreQuotedForTheShell() {
        let values = ["url": "http://h/a b?x=1&y='2'", "origin": "http://o", "referer": "http://p/q"]
        #expect(RefreshCommand.argv(Hook(command: "get-link --page {referer} {url}"), placeholders: values)
            == ["get-link", "--page", "http://p/q", "http://h/a b?x=1&y='2'"])
        #expect(RefreshCommand.argv(Hook(command: "echo {url}", shell: true), placeholders: values)
            == ["/bin/sh", "-c", "echo 'http://h/a b?x=1&y='\\''2'\\'''"])
    }

    @Test func theFirstLineOfTheOutputIsTheAddress() async {
        let clock = ManualClock()
        let printed = await RefreshCommand.run(["/bin/sh", "-c", "printf '  http://new/%s  \\nsecond\\n' \"$HAUL_ID\""],
                                               environment: ["HAUL_ID": "3"], clock: clock)
        #expect(printed == .success("http://new/3"))
        #expect(await RefreshCommand.run(["true"], environment: [:], clock: clock)
            == .failure(RefreshCommand.Failure(why: "'true' printed no address")))
        #expect(await RefreshCommand.run(["/bin/sh", "-c", "exit 3"], environment: [:], clock: clock)
            == .failure(RefreshCommand.Failure(why: "'/bin/sh' exited with status 3")))
        #expect(await RefreshCommand.run(["/nonexistent/get-link"], environment: [:], clock: clock)
            == .failure(RefreshCommand.Failure(why: "cannot run '/nonexistent/get-link': No such file or directory")))
    }

    /// Past 60 s of the download's clock the command is killed, with what it started.
    @Test func aCommandThatHangsIsKilledAtTheTimeout() async {
        let clock = ManualClock()
        async let ran = RefreshCommand.run(["/bin/sh", "-c", "sleep 600; echo http://late"], environment: [:], clock: clock)
        await clock.waitForSleepers()
        clock.advance(by: .seconds(60))
        #expect(await ran == .failure(RefreshCommand.Failure(why: "'/bin/sh' did not finish in 60 s")))
    }
}
