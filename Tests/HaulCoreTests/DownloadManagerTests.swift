import Foundation
import NIOConcurrencyHelpers
import SampleServer
import TestSupport
import Testing
@testable import HaulCore

@Suite struct DownloadManagerTests {
    /// A manager of one slot with `name` added, once its download is under way.
    func downloading(_ server: SampleServer, _ name: String, in dir: TempDirectory) async throws
        -> (DownloadManager, DownloadID)
    {
        let manager = DownloadManager(concurrency: 1)
        let id = await manager.add(job(server, name, in: dir))
        _ = try await watch(manager) { $0.contains(.state(id: id, .downloading)) }
        return (manager, id)
    }

    func job(_ server: SampleServer, _ name: String, in dir: TempDirectory) -> DownloadJob {
        DownloadJob(url: server.downloadURL(name), outputDirectory: dir.path)
    }

    /// Collects the manager's events until `stop` says enough (or the stream ends); fails after 30 s.
    func watch(_ manager: DownloadManager, until stop: @escaping @Sendable ([ManagerEvent]) -> Bool)
        async throws -> [ManagerEvent]
    {
        try await within(30, "manager events") {
            var seen: [ManagerEvent] = []
            for await event in manager.events {
                seen.append(event)
                if stop(seen) { break }
            }
            return seen
        }
    }

    @Test func neverRunsMoreThanTheConcurrencyLimit() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let manager = DownloadManager(concurrency: 2)
            for _ in 0..<5 { await manager.add(job(server, "small.bin", in: dir)) }
            let events = try await watch(manager) { seen in
                seen.filter { if case .state(_, .done) = $0 { true } else { false } }.count == 5
            }
            var active = Set<DownloadID>()
            var most = 0
            for case .state(let id, let state) in events {
                if state.isActive { active.insert(id) } else { active.remove(id) }
                most = max(most, active.count)
            }
            // Two transfers at most; a download whose bytes have all come writes and syncs its file without a
            // slot, and at most `finishingLimit` do so at once.
            #expect(await manager.mostTransferring == 2)
            #expect(most <= 2 + DownloadManager.finishingLimit(concurrency: 2))
            #expect(await manager.runningCount == 0)
            #expect(dir.listing().count == 5)
        }
    }

    /// The service's manager (`batched`): every event in `batches`, in order, none in `events`, and counted
    /// as the stream's are (the service answers a command once it has handled `eventsYielded` of them).
    @Test func aBatchedManagerGivesEveryEventInBatchesInOrderAndCountsThem() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let manager = DownloadManager(concurrency: 2, batched: true)
            let batches = try #require(manager.batches)
            var added: [DownloadID] = []
            for _ in 0..<6 { added.append(await manager.add(job(server, "small.bin", in: dir))) }
            let ids = added
            let seen = try await within(30, "batches") {
                var seen: [ManagerEvent] = []
                var doneCount = 0
                while doneCount < ids.count, let batch = await batches.next() {
                    #expect(!batch.isEmpty)
                    seen += batch
                    doneCount = seen.filter { if case .state(_, .done) = $0 { true } else { false } }.count
                }
                return seen
            }
            var none = manager.events.makeAsyncIterator()
            #expect(await none.next() == nil)
            #expect(manager.eventsYielded == seen.count + batches.takeWaiting().count)
            func owner(of event: ManagerEvent) -> DownloadID { event.downloadID }
            for id in ids {
                let own = seen.filter { owner(of: $0) == id }
                #expect({ if case .added(id, _, _)? = own.first { true } else { false } }())
                #expect(own.last == .state(id: id, .done))
                let connecting = own.firstIndex(of: .state(id: id, .connecting))
                let finished = own.firstIndex { if case .finished = $0 { true } else { false } }
                #expect(connecting != nil && finished != nil && connecting! < finished!)
            }
            await manager.finishEvents()
            #expect(await batches.next() == nil)
        }
    }

    /// The order of one download's finish and the next one's start, at one download at once; both fetch `file`.
    private func finishAndNextStart(sync: Bool, file: GeneratedFile) async throws
        -> (finished: Int, nextConnecting: Int)
    {
        let dir = TempDirectory()
        return try await withSampleServer(SampleServerConfiguration(port: 0, files: [file], jpegs: false)) { server in
            let manager = DownloadManager(concurrency: 1)
            var first = job(server, file.name, in: dir)
            first.sync = sync
            var second = job(server, file.name, in: dir)
            second.sync = sync
            let one = await manager.add(first)
            let two = await manager.add(second)
            // Until both have ended: with syncs, the first one's fsync (off its slot) can end after the whole
            // of the second download.
            let events = try await watch(manager) { seen in
                seen.contains(.state(id: two, .done))
                    && seen.contains { if case .finished(one, _, _) = $0 { true } else { false } }
            }
            let finished = try #require(events.firstIndex { if case .finished(one, _, _) = $0 { true } else { false } })
            let connecting = try #require(events.firstIndex(of: .state(id: two, .connecting)))
            let (stem, ext) = FileNaming.split(file.name)
            #expect(dir.listing() == ["\(stem).1\(ext)", file.name])
            return (finished, connecting)
        }
    }

    @Test func aDownloadThatSyncsGivesItsSlotToTheNextOnceItsBytesHaveCome() async throws {
        // -j 1: the second transfer starts while the first file is synced and named.
        let synced = try await finishAndNextStart(sync: true, file: GeneratedFile(name: "small.bin", size: 1 << 20))
        #expect(synced.nextConnecting < synced.finished)
        // Without a sync, a download larger than a transfer holds in memory (its last bytes come after its first
        // writes) has only a rename left after its last write: the slot is kept to the end. (A body whole in
        // memory gives it back before its write, synced or not: the test below.)
        let unsynced = try await finishAndNextStart(sync: false, file: GeneratedFile(name: "four.bin", size: 4 << 20))
        #expect(unsynced.finished < unsynced.nextConnecting)
    }

    /// A file small enough that its head waits for its body (a 64 KiB one): the driver's `deliveryDelay` is long,
    /// so its download wakes once, with the whole body in memory, however slowly the bytes come on a loaded
    /// machine.
    private static let tiny = GeneratedFile(name: "tiny.bin", size: 64 << 10)

    /// Synced or not: what is left once the body is in memory is the disk's (a direct write, a device round trip,
    /// and with a sync the fsyncs).
    @Test(arguments: [true, false])
    func aSmallFileGivesItsSlotBackBeforeItsBytesAreWritten(synced: Bool) async throws {
        let dir = TempDirectory()
        let driver = CurlDriver(deliveryDelay: .seconds(600))
        try await withSampleServer(SampleServerConfiguration(port: 0, files: [Self.tiny], jpegs: false)) { server in
            // -j 1: the second transfer starts before the first file's bytes go to disk (its first progress).
            let manager = DownloadManager(downloader: Downloader(driver: driver), concurrency: 1)
            var job = DownloadJob(url: server.downloadURL("tiny.bin"), outputDirectory: dir.path)
            job.sync = synced
            let one = await manager.add(job)
            let two = await manager.add(job)
            // Both done, in whichever order their syncs end (the first may well end after the second).
            let events = try await watch(manager) { $0.contains(.state(id: two, .done)) && $0.contains(.state(id: one, .done)) }
            let written = try #require(events.firstIndex { if case .progress(one, _) = $0 { true } else { false } })
            let connecting = try #require(events.firstIndex(of: .state(id: two, .connecting)))
            #expect(connecting < written)
            #expect(dir.listing() == ["tiny.1.bin", "tiny.bin"])
        }
        await driver.shutdown()
    }

    @Test func aSmallFileAsksForItsSlotAgainBeforeTheSyncWhenNoneWasTaken() async throws {
        let dir = TempDirectory()
        let driver = CurlDriver(deliveryDelay: .seconds(600))
        try await withSampleServer(SampleServerConfiguration(port: 0, files: [Self.tiny], jpegs: false)) { server in
            for taken in [true, false] {
                let part = dir.file("tiny.bin.part")
                // What the part held each time the download said its transfer had ended.
                let sizes = NIOLockedValueBox<[Int64]>([])
                var job = DownloadJob(url: server.downloadURL("tiny.bin"), outputDirectory: dir.path)
                job.outputName = "tiny.bin"
                job.existingFile = .overwrite
                _ = try await Downloader(driver: driver).download(job, transferEnded: {
                    var info = stat()
                    let size = lstat(part, &info) == 0 ? Int64(info.st_size) : -1
                    sizes.withLockedValue { $0.append(size) }
                    return taken
                }) { _ in }
                // First with nothing written yet; when the manager kept the slot, once more with all of it.
                #expect(sizes.withLockedValue { $0 } == (taken ? [0] : [0, Int64(Self.tiny.size)]))
                #expect(expectedSHA256(of: Self.tiny) == (try FileDigest.hex(of: dir.file("tiny.bin"))))
            }
        }
        await driver.shutdown()
    }

    /// A hook waits at the naming gate (the service's store) for every event up to its download's end: a kill
    /// before the store holds "done" leaves a hook not yet run, which the next service runs (`RestoreTests`).
    @Test func aHookStartsOnlyOnceTheGateHasLetItsDownloadsEndThrough() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let manager = DownloadManager(concurrency: 1)
            let marker = dir.file("hook-ran")
            let gateCalls = NIOLockedValueBox<[(mark: Int, hookHadRun: Bool)]>([])
            await manager.setNamingGate { mark in
                gateCalls.withLockedValue { $0.append((mark, FileManager.default.fileExists(atPath: marker))) }
            }
            var job = job(server, "small.bin", in: dir)
            job.onComplete = Hook(command: "touch '\(marker)'", shell: true)
            let id = await manager.add(job)
            let events = try await watch(manager) { $0.contains(.state(id: id, .done)) }
            await manager.waitForHooks()
            #expect(FileManager.default.fileExists(atPath: marker))
            let last = gateCalls.withLockedValue { $0.last }
            #expect(last?.mark == events.count, "the hook waited for every event up to its download's done")
            #expect(last?.hookHadRun == false)
        }
    }

    /// A stopping service waits for the hooks held at the gate to start (its store has taken the last events),
    /// so that no hook whose "done" is stored is left unstarted when the process ends.
    @Test func theHooksHeldAtTheGateCanBeWaitedForToStart() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let manager = DownloadManager(concurrency: 1)
            let marker = dir.file("hook-ran")
            let calls = NIOLockedValueBox(0)
            let (entered, enteredSink) = AsyncStream<Void>.makeStream()
            let (release, releaseSink) = AsyncStream<Void>.makeStream()
            await manager.setNamingGate { _ in
                // The first call is the rename's; the second the hook's, held until the test lets it go.
                guard calls.withLockedValue({ $0 += 1; return $0 }) == 2 else { return }
                enteredSink.finish()
                for await _ in release {}
            }
            var job = job(server, "small.bin", in: dir)
            job.onComplete = Hook(command: "touch '\(marker)'", shell: true)
            let id = await manager.add(job)
            _ = try await watch(manager) { $0.contains(.state(id: id, .done)) }
            for await _ in entered {}
            #expect(await manager.hooksWaitingToStart == 1)
            releaseSink.finish()
            await manager.waitForHookStarts()
            #expect(await manager.hooksWaitingToStart == 0)
            await manager.waitForHooks()
            #expect(FileManager.default.fileExists(atPath: marker))
        }
    }

    @Test func cancelAllCancelsEveryStoredTaskAndTheQueue() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 1 << 20) { server in
            // On a clock that never moves: nothing on the way out may wait for time (a retry's delay, a
            // checkpoint's turn), or the tasks would never end.
            let manager = DownloadManager(downloader: Downloader(clock: ManualClock()), concurrency: 2)
            for _ in 0..<3 { await manager.add(job(server, "medium.bin", in: dir)) }
            _ = try await watch(manager) { seen in
                seen.filter { if case .state(_, .downloading) = $0 { true } else { false } }.count == 2
            }
            #expect(await manager.runningCount == 2)
            await manager.cancelAll()
            // Every row says so at once: each stored task has been cancelled, and with it its transfer.
            #expect(await manager.states.map(\.state) == [.cancelled, .cancelled, .cancelled])
            // The tasks end once they have recorded what they have (fsync + state file).
            await manager.waitUntilIdle()
            #expect(await manager.runningCount == 0)
            #expect(await manager.states.map(\.state) == [.cancelled, .cancelled, .cancelled])
            // The two that had started keep .part and its state for a later resume; the queued one never began.
            #expect(dir.listing() == ["medium.1.bin.part", "medium.1.bin.part.json", "medium.bin.part", "medium.bin.part.json"])
            #expect(await manager.exitCode == 10)
        }
    }

    @Test func pauseKeepsThePartAndResumeFinishes() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 4 << 20) { server in
            let (manager, id) = try await downloading(server, "medium.bin", in: dir)
            await manager.pause(id)
            _ = try await watch(manager) { $0.contains(.state(id: id, .paused)) }
            // The row says paused at once; the task ends once it has recorded what it has.
            try await within(10, "the paused task ended") { await manager.waitUntilIdle() }
            #expect(await manager.runningCount == 0)
            #expect(FileManager.default.fileExists(atPath: dir.file("medium.bin.part")))
            server.setRate(nil)
            await manager.resume(id)
            await manager.waitUntilIdle()
            #expect(await manager.state(of: id) == .done)
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }

    /// A paused download can be cancelled (`haul cancel`, aria2's `remove`): it was acknowledged and left
    /// paused, so a front end could never take it off its list.
    @Test func aPausedDownloadCanBeCancelled() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 4 << 20) { server in
            let (manager, id) = try await downloading(server, "medium.bin", in: dir)
            await manager.pause(id)
            try await within(10, "the paused task ended") { await manager.waitUntilIdle() }
            await manager.cancel(id)
            #expect(await manager.state(of: id) == .cancelled)
            #expect(FileManager.default.fileExists(atPath: dir.file("medium.bin.part")))
        }
    }

    /// A cancel that comes while a pause's task still ends (aria2's `remove` right after `pause`, `haul cancel`
    /// right after `haul pause`) cancels: it was acknowledged and dropped, and the download stayed paused.
    @Test func aCancelRightAfterAPauseCancels() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 4 << 20) { server in
            let (manager, id) = try await downloading(server, "medium.bin", in: dir)
            await manager.pause(id)
            await manager.cancel(id)  // before the paused task has ended
            #expect(await manager.state(of: id) == .cancelled)
            _ = try await watch(manager) { $0.contains(.state(id: id, .cancelled)) }
            try await within(10, "the cancelled task ended") { await manager.waitUntilIdle() }
            #expect(await manager.state(of: id) == .cancelled)
            #expect(FileManager.default.fileExists(atPath: dir.file("medium.bin.part")), "cancel keeps the part")
        }
    }

    @Test func resumingWhileTheCancelledTaskStillEndsContinuesTheSamePart() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 4 << 20) { server in
            let (manager, id) = try await downloading(server, "medium.bin", in: dir)
            await manager.pause(id)
            await manager.resume(id)  // before the cancelled task has released NAME.part
            server.setRate(nil)
            await manager.waitUntilIdle()
            #expect(await manager.state(of: id) == .done)
            #expect(dir.listing() == ["medium.bin"])
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }

    /// A stop that comes as the first bytes do: the download's own `.downloading` must not follow the
    /// stop's `.cancelled` in the events (a list built from them, the service's, showed the download active
    /// for ever after a client removed it).
    @Test func aStopAsTheFirstBytesComeIsTheLastWord() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 1 << 20) { server in
            let seen = NIOLockedValueBox<[ManagerEvent]>([])
            let manager = DownloadManager(concurrency: 1) { event in seen.withLockedValue { $0.append(event) } }
            let (reached, reachedNow) = AsyncStream.makeStream(of: Void.self)
            let release = DispatchSemaphore(value: 0)
            // However the test ends, the held task goes on (a thread blocked for ever would outlive it).
            defer { release.signal() }
            await manager.setBeforeDownloadingState { _ in
                reachedNow.yield()
                release.wait()
            }
            let id = await manager.add(job(server, "medium.bin", in: dir))
            try await within(30, "the first bytes") {
                for await _ in reached { break }
            }
            await manager.cancel(id)
            release.signal()
            try await within(30, "the cancelled task ended") { await manager.waitUntilIdle() }
            #expect(await manager.state(of: id) == .cancelled)
            let states = seen.withLockedValue { events in
                events.compactMap { event -> DownloadState? in
                    if case .state(id, let state) = event { state } else { nil }
                }
            }
            #expect(states.last == .cancelled)
        }
    }

    @Test func retryAfterAFailureSucceeds() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            var faults = SampleServerFaults()
            faults.unavailableCount = 1
            server.setFaults(faults)
            let manager = DownloadManager(concurrency: 1)
            var once = job(server, "small.bin", in: dir)
            once.retries = 0
            let id = await manager.add(once)
            await manager.waitUntilIdle()
            guard case .failed(let error) = await manager.state(of: id) else {
                Issue.record("expected a failure")
                return
            }
            #expect(error.category == .server)
            await manager.retry(id)
            await manager.waitUntilIdle()
            #expect(await manager.state(of: id) == .done)
            await manager.remove(id)
            #expect(await manager.states.isEmpty)
            #expect(dir.listing() == ["small.bin"])
        }
    }

    /// A download cancelled a moment ago says so before its task has ended; removing it then (the TUI's `d`
    /// right after `c`, `haul rm` right after `haul cancel`) waits for the task instead of doing nothing.
    @Test func aDownloadRemovedRightAfterItsCancelIsRemoved() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            var faults = SampleServerFaults()
            faults.holdAt = [100_000]
            server.setFaults(faults)
            let manager = DownloadManager(concurrency: 1)
            let id = await manager.add(job(server, "small.bin", in: dir))
            await server.waitUntilHeld(1)
            await manager.cancel(id)
            #expect(await manager.state(of: id) == .cancelled)
            await manager.remove(id)
            #expect(await manager.states.isEmpty)
            server.release()
        }
    }

    @Test func thousandsOfQueuedURLsAreCheap() async throws {
        // Nothing listens on port 1: each fails at once, so this measures the queue, not the network.
        let manager = DownloadManager(concurrency: 8)
        let dir = TempDirectory()
        for n in 0..<2000 {
            var job = DownloadJob(url: "http://127.0.0.1:1/f\(n)", outputDirectory: dir.path)
            job.retries = 0
            await manager.add(job)
        }
        await manager.waitUntilIdle()
        let states = await manager.states
        #expect(states.count == 2000)
        #expect(states.allSatisfy { if case .failed(let e) = $0.state { e.category == .network } else { false } })
        #expect(await manager.exitCode == 4)
    }
}

@Suite struct LimitsAndChecksumTests {
    @Test func theOverallRateCapIsSharedByConcurrentDownloads() async throws {
        let dir = TempDirectory()
        let driver = CurlDriver()
        driver.setOverallReceiveRate(8 << 20)
        try await withSampleServer { (server) async throws in
            let manager = DownloadManager(downloader: Downloader(driver: driver), concurrency: 2)
            for _ in 0..<2 { await manager.add(DownloadJob(url: server.downloadURL("medium.bin"), outputDirectory: dir.path)) }
            let clock = ContinuousClock()
            let began = clock.now
            await manager.waitUntilIdle()
            // 40 MiB at 8 MiB/s overall takes about 5 s (curl lets a first burst through); 8 MiB/s for each
            // would take 2.5 s. On the wall clock: libcurl enforces the cap against its own real time, which
            // no injected clock reaches. A lower bound, so a loaded machine cannot make it fail.
            #expect(clock.now - began >= .milliseconds(3500))
            #expect(await manager.states.map(\.state) == [.done, .done])
        }
        await driver.shutdown()
    }

    @Test func aMatchingChecksumPassesAndAWrongOneExitsNine() async throws {
        let dir = TempDirectory()
        try await withSampleServer { (server) async throws in
            var good = DownloadJob(url: server.downloadURL("small.bin"), outputDirectory: dir.path)
            good.checksum = try Checksum.parse("sha256=" + expectedSHA256("small.bin")).get()
            _ = try await Downloader().download(good) { _ in }
            #expect(dir.listing() == ["small.bin"])

            var bad = DownloadJob(url: server.downloadURL("medium.bin"), outputDirectory: dir.path)
            bad.checksum = try Checksum.parse("md5=" + String(repeating: "0", count: 32)).get()
            let error = await #expect(throws: HaulError.self) { _ = try await Downloader().download(bad) { _ in } }
            #expect(error?.category == .checksum)
            #expect(error?.category.exitCode == 9)
            // Not named as if it were right, and nothing left to resume.
            #expect(dir.listing() == ["medium.bin.part", "small.bin"])
        }
    }

    @Test func checksumArgumentsAreValidated() {
        #expect(throws: Never.self) { try Checksum.parse("SHA1=" + String(repeating: "a", count: 40)).get() }
        #expect(throws: HaulError.self) { try Checksum.parse("sha256=abc").get() }
        #expect(throws: HaulError.self) { try Checksum.parse("crc32=00000000").get() }
        #expect(throws: HaulError.self) { try Checksum.parse("md5=" + String(repeating: "g", count: 32)).get() }
        // Found by the fuzz pass: Character.isHexDigit takes fullwidth digits, which no digest can match.
        #expect(throws: HaulError.self) { try Checksum.parse("md5=" + String(repeating: "\u{FF41}", count: 32)).get() }
    }
}
