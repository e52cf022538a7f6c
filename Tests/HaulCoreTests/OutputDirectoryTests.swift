import Foundation
import NIOConcurrencyHelpers
import SampleServer
import TestSupport
import Testing
@testable import HaulCore

/// A hostile neighbour and many downloads of one name: nothing is ever written outside the output
/// directory or through a name haul did not create, and no two downloads share a file.
@Suite struct OutputDirectoryTests {
    /// A file outside the output directory that a planted link points at, and what it held.
    struct Outside {
        let dir = TempDirectory()
        let original: [UInt8] = Array("precious data, not a download\n".utf8)
        var path: String { dir.file("victim.txt") }

        init() {
            _ = FileManager.default.createFile(atPath: path, contents: Data(original))
        }

        var untouched: Bool { dir.contents("victim.txt") == original && dir.listing() == ["victim.txt"] }
    }

    func symlink(_ target: String, at path: String) {
        #expect(Glibc.symlink(target, path) == 0)
    }

    @Test func threeHundredDownloadsOfOneNameGetThreeHundredFiles() async throws {
        let dir = TempDirectory()
        // A small file: the race is in choosing names, and 300 MiB of fsynced writes would only load the suite.
        let same = GeneratedFile(name: "same.bin", size: 64 << 10)
        try await withSampleServer(SampleServerConfiguration(port: 0, files: [same], jpegs: false)) { server in
            let manager = DownloadManager(downloader: .quickRetries, concurrency: 4)
            // Different URLs (the fragment is not sent), one name: the server's Content-Disposition.
            for n in 0..<300 {
                var job = DownloadJob(url: server.downloadURL("same.bin") + "#\(n)", outputDirectory: dir.path)
                job.retries = 0
                await manager.add(job)
            }
            await manager.waitUntilIdle()
            #expect(await manager.states.map(\.state).allSatisfy { $0 == .done })
            let names = dir.listing()
            #expect(names.count == 300)
            #expect(names.allSatisfy { $0 == "same.bin" || ($0.hasPrefix("same.") && $0.hasSuffix(".bin")) })
            #expect(!names.contains { $0.hasSuffix(".part") || $0.hasSuffix(".json") || $0.hasSuffix(".tmp") })
            let expected = same.bytes(offset: 0, count: same.size)
            for name in names { #expect(dir.contents(name) == expected, "\(name)") }
        }
    }

    @Test func aPlantedPartSymlinkIsLeftAloneAndNeverWrittenThrough() async throws {
        let dir = TempDirectory()
        let outside = Outside()
        symlink(outside.path, at: dir.file("small.bin.part"))
        try await withSampleServer { (server) async throws in
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "small.bin", dir))
            #expect(try result.get().path == dir.file("small.1.bin"))
            #expect(facts == [.partLeftAlone(part: "small.bin.part", reason: .untrusted(.symbolicLink))])
            #expect(try FileDigest.hex(of: dir.file("small.1.bin")) == expectedSHA256("small.bin"))
        }
        #expect(outside.untouched)
        #expect(dir.listing() == ["small.1.bin", "small.bin.part"])
    }

    @Test func aDanglingPartSymlinkCreatesNothingOutside() async throws {
        let dir = TempDirectory()
        let outside = Outside()
        symlink(outside.dir.file("created-by-haul"), at: dir.file("small.bin.part"))
        try await withSampleServer { (server) async throws in
            let (result, _) = await runQuickly(DownloadJob.sample(server, "small.bin", dir))
            #expect(try result.get().path == dir.file("small.1.bin"))
        }
        #expect(outside.untouched)
    }

    @Test func aHardLinkedPartIsNotWrittenThrough() async throws {
        let dir = TempDirectory()
        let outside = Outside()
        #expect(link(outside.path, dir.file("small.bin.part")) == 0)
        try await withSampleServer { (server) async throws in
            let (result, facts) = await runQuickly(DownloadJob.sample(server, "small.bin", dir))
            #expect(try result.get().path == dir.file("small.1.bin"))
            #expect(facts == [.partLeftAlone(part: "small.bin.part", reason: .untrusted(.otherHardLinks))])
        }
        #expect(outside.untouched)
        #expect(dir.contents("small.bin.part") == outside.original)
    }

    /// Another process finishes the part this claim has just opened: it renames it into place and lets go
    /// of its lock before the claim takes it. The claim must not lock (and write into) what is now that
    /// process's finished file; it makes a part of its own. (Seen in CI: two processes racing for 300 names,
    /// one wrote into the other's finished file and then found its part "replaced".)
    @Test func aPartRenamedIntoPlaceBetweenOpenAndLockIsNotClaimed() throws {
        let dir = TempDirectory()
        let directory = try OutputDirectory(dir.path)
        _ = FileManager.default.createFile(atPath: dir.file("x.bin.part"), contents: Data("finished".utf8))
        let claim = try directory.claimPart("x.bin.part", afterOpen: {
            precondition(rename(dir.file("x.bin.part"), dir.file("x.bin")) == 0)
        })
        guard case .created(let part) = claim else {
            Issue.record("expected a new part, got \(claim)")
            return
        }
        #expect(directory.holds("x.bin.part", part))
        #expect(try part.size() == 0)
        try part.close()
        #expect(dir.contents("x.bin") == Array("finished".utf8))
    }

    /// An RPC `dir`, checked when the download was added, is reached from its allowed root without following
    /// a link: one swapped in below the root later (or made where a missing directory was to be created)
    /// leads nowhere, and nothing is written outside the root.
    @Test func aConfinedDirectoryIsReachedWithoutFollowingALink() throws {
        let dir = TempDirectory()
        let root = dir.file("allowed")
        let outside = dir.file("outside")
        try FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        // A real directory below the root, and a missing one, are opened (the missing one made).
        #expect(throws: Never.self) { _ = try OutputDirectory(root + "/sub", below: root) }
        #expect(throws: Never.self) { _ = try OutputDirectory(root + "/new/deeper", below: root) }
        #expect(FileManager.default.fileExists(atPath: root + "/new/deeper"))
        // `sub` swapped for a link to `outside`, and `later` made a link before it was created.
        try FileManager.default.removeItem(atPath: root + "/sub")
        try FileManager.default.createSymbolicLink(atPath: root + "/sub", withDestinationPath: outside)
        try FileManager.default.createSymbolicLink(atPath: root + "/later", withDestinationPath: outside)
        // Also through a slash that a combining mark joins into one Character: still `..`, still a link.
        for path in [root + "/sub", root + "/later/x", root + "/../outside", outside, root + "/../\u{301}x",
                     root + "/sub/\u{301}x", root + "/later/\u{301}x"] {
            #expect(throws: HaulError.self, "\(path)") { _ = try OutputDirectory(path, below: root) }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["allowed", "outside"])
        // Opened as it is without a root (the command line's -o may be a link).
        #expect(throws: Never.self) { _ = try OutputDirectory(root + "/sub") }
    }

    @Test func aTargetSymlinkIsNeverFollowed() async throws {
        let dir = TempDirectory()
        let outside = Outside()
        symlink(outside.path, at: dir.file("small.bin"))
        try await withSampleServer { (server) async throws in
            let (renamed, _) = await runQuickly(DownloadJob.sample(server, "small.bin", dir))
            #expect(try renamed.get().path == dir.file("small.1.bin"))
            // --overwrite replaces the link itself, never the file it points at.
            var job = DownloadJob.sample(server, "small.bin", dir)
            job.existingFile = .overwrite
            let (replaced, _) = await runQuickly(job)
            #expect(try replaced.get().path == dir.file("small.bin"))
        }
        #expect(outside.untouched)
        var info = stat()
        #expect(lstat(dir.file("small.bin"), &info) == 0 && info.st_mode & S_IFMT == S_IFREG)
        #expect(try FileDigest.hex(of: dir.file("small.bin")) == expectedSHA256("small.bin"))
    }

    /// A downloader that checkpoints at once and often, so state files are written during the test.
    var eager: Downloader {
        var downloader = Downloader.quickRetries
        downloader.firstCheckpoint = .zero
        downloader.checkpointInterval = .milliseconds(10)
        return downloader
    }

    @Test func plantedStateFileLinksAreNeitherReadNorWrittenThrough() async throws {
        let dir = TempDirectory()
        let outside = Outside()
        try await withSampleServer(rate: 16 << 20) { (server) async throws in
            // The state file and the old fixed temporary name both point outside.
            symlink(outside.path, at: dir.file("medium.bin.part.json"))
            symlink(outside.path, at: dir.file("medium.bin.part.json.tmp"))
            let (result, facts) = await eager.runCollectingFacts(DownloadJob.sample(server, "medium.bin", dir))
            #expect(try result.get().path == dir.file("medium.bin"))
            #expect(facts == [.resumeRefused(part: "medium.bin.part", reason: .unreadableState)])
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
        #expect(outside.untouched)
        #expect(dir.listing() == ["medium.bin", "medium.bin.part.json.tmp"])
    }

    /// A link at the journal's name (symbolic, or a hard link to another file) is neither truncated nor
    /// appended to: the download goes on without a journal and the link stays as it was.
    @Test(arguments: [true, false])
    func aPlantedJournalLinkIsNotWrittenThrough(symbolic: Bool) async throws {
        let dir = TempDirectory()
        let outside = Outside()
        var downloader = eager
        downloader.recordAfter = .zero
        try await withSampleServer(rate: 16 << 20) { (server) async throws in
            if symbolic {
                symlink(outside.path, at: dir.file("medium.bin.part.journal"))
            } else {
                #expect(link(outside.path, dir.file("medium.bin.part.journal")) == 0)
            }
            let (result, _) = await downloader.runCollectingFacts(DownloadJob.sample(server, "medium.bin", dir))
            #expect(try result.get().path == dir.file("medium.bin"))
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
        #expect(outside.untouched)
        #expect(dir.listing() == ["medium.bin", "medium.bin.part.journal"])
        #expect(WriteJournal.load("medium.bin.part.journal", in: try OutputDirectory(dir.path)).isEmpty)
    }

    @Test func stateFilesAreOwnerOnlyAndHoldNoPassword() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 4 << 20) { (server) async throws in
            let url = server.downloadURL("medium.bin").replacingOccurrences(of: "http://", with: "http://ann:s3cret@")
            var job = DownloadJob(url: url, outputDirectory: dir.path)
            job.retries = 0
            let (states, seen) = AsyncStream.makeStream(of: [UInt8].self)
            let task = Task {
                try await eager.download(job) { event in
                    if case .progress = event, let bytes = dir.contents("medium.bin.part.json") { seen.yield(bytes) }
                }
            }
            let state = try await within(30, "a state file") { await states.first { _ in true } }
            var info = stat()
            #expect(stat(dir.file("medium.bin.part.json"), &info) == 0 && info.st_mode & 0o777 == 0o600)
            task.cancel()
            _ = await task.result
            let text = String(decoding: try #require(state), as: UTF8.self)
            #expect(!text.contains("s3cret"))
            #expect(text.contains("ann:***@"))
            let kept = String(decoding: dir.contents("medium.bin.part.json") ?? [], as: UTF8.self)
            #expect(!kept.isEmpty && !kept.contains("s3cret"))
        }
    }

    @Test func aFileThatAppearsAtTheNameMidDownloadIsKept() async throws {
        let dir = TempDirectory()
        let mine = Array("the user's own file\n".utf8)
        try await withSampleServer(rate: 16 << 20) { (server) async throws in
            var planted = false
            var facts: [DownloadFact] = []
            let result = try await Downloader.quickRetries.download(DownloadJob.sample(server, "medium.bin", dir)) {
                event in
                switch event {
                case .progress where !planted:
                    planted = true
                    _ = FileManager.default.createFile(atPath: dir.file("medium.bin"), contents: Data(mine))
                case .fact(let fact): facts.append(fact)
                default: break
                }
            }
            #expect(result.path == dir.file("medium.1.bin"))
            #expect(facts == [.savedAs(wanted: "medium.bin", savedAs: "medium.1.bin")])
        }
        #expect(dir.contents("medium.bin") == mine)
        #expect(try FileDigest.hex(of: dir.file("medium.1.bin")) == expectedSHA256("medium.bin"))
        #expect(dir.listing() == ["medium.1.bin", "medium.bin"])
    }

    @Test func outputNamesArePlainNames() async throws {
        let dir = TempDirectory()
        for name in ["../../x.bin", "a/b", "..", ".", ""] {
            var job = DownloadJob(url: "http://127.0.0.1:9/x", outputDirectory: dir.path, outputName: name)
            job.retries = 0
            let (result, _) = await runQuickly(job)
            #expect(result.failure?.category == .usage, "\(name)")
        }
        #expect(dir.listing().isEmpty)
    }

    @Test func urlPasswordsAreMasked() {
        #expect(URLRedaction.masked("https://ann:s3cret@h:8/x?y#z") == "https://ann:***@h:8/x?y#z")
        #expect(URLRedaction.masked("https://ann:s3@cret@h/x") == "https://ann:***@h/x")
        #expect(URLRedaction.masked("https://ann@h/x") == "https://ann@h/x")
        #expect(URLRedaction.masked("https://h/x?u=a:b@c") == "https://h/x?u=a:b@c")
        #expect(URLRedaction.masked("not a url") == "not a url")
        #expect(ResumeState(url: "http://a:b@h/f", etag: nil, lastModified: nil, total: nil).url == "http://a:***@h/f")
    }

    @Test func theManagerAnnouncesURLsMasked() async throws {
        // Held to the end: a directory released at once was made again by the download, and left behind.
        let dir = TempDirectory()
        let manager = DownloadManager(concurrency: 1)
        let events = manager.events
        await manager.add(DownloadJob(url: "http://ann:s3cret@127.0.0.1:9/f.bin", outputDirectory: dir.path))
        for await event in events {
            if case .added(_, let url, _) = event {
                #expect(url == "http://ann:***@127.0.0.1:9/f.bin")
                break
            }
        }
        await manager.cancelAll()
        await manager.waitUntilIdle()
    }
}

/// State files are replaced through temporaries that never outlive a failure.
@Suite struct StateFileTests {
    @Test func aFailedReplaceLeavesNoTemporaryBehind() throws {
        let dir = TempDirectory()
        // A non-empty directory where the state file should go: the final rename fails.
        #expect(mkdir(dir.file("x.part.json"), 0o755) == 0)
        _ = FileManager.default.createFile(atPath: dir.file("x.part.json/keep"), contents: Data())
        let directory = try OutputDirectory(dir.path)
        #expect(throws: HaulError.self) { try directory.replace("x.part.json", with: Array("{}".utf8)) }
        #expect(dir.listing() == ["x.part.json"])
        // And one that succeeds leaves only the file, mode 0600.
        try directory.replace("y.part.json", with: Array("{}".utf8))
        #expect(dir.listing() == ["x.part.json", "y.part.json"])
        var info = stat()
        #expect(stat(dir.file("y.part.json"), &info) == 0 && info.st_mode & 0o777 == 0o600)
    }
}

extension StateFileTests {
    /// A kill -9 in the middle of a state save leaves its temporary; the next claim of the part removes it.
    @Test func aClaimRemovesTheTemporariesACrashLeft() throws {
        let dir = TempDirectory()
        let outside = TempDirectory()
        _ = FileManager.default.createFile(atPath: outside.file("victim"), contents: Data("keep".utf8))
        _ = FileManager.default.createFile(atPath: dir.file("a.bin.part"), contents: Data(count: 10))
        for name in ["a.bin.part.json.1a2b3c4d.tmp", "a.bin.part.json.f.tmp"] {
            _ = FileManager.default.createFile(atPath: dir.file(name), contents: Data("{".utf8))
        }
        #expect(symlink(outside.file("victim"), dir.file("a.bin.part.json.0e.tmp")) == 0)
        // Not haul's temporaries: other names stay.
        for name in ["a.bin.part.json.notes.tmp", "b.bin.part.json.1a2b3c4d.tmp", "a.bin.part.json.123456789.tmp"] {
            _ = FileManager.default.createFile(atPath: dir.file(name), contents: Data())
        }
        let claim = try #require(try Claim.take("a.bin", in: OutputDirectory(dir.path), policy: .rename,
                                                url: "http://h/a.bin", resume: true, notice: { _ in }).claim)
        #expect(claim.name == "a.bin")
        #expect(dir.listing() == ["a.bin.part", "a.bin.part.json.123456789.tmp", "a.bin.part.json.notes.tmp",
                                  "b.bin.part.json.1a2b3c4d.tmp"])
        #expect(outside.contents("victim") == Array("keep".utf8))
    }
}

extension StateFileTests {
    /// A resume right after a pause continues its own part even when that part's lock outlives the last
    /// run by a moment (a child forked by another thread holds a copy of the descriptor until it execs): the
    /// claim waits for it instead of starting over under `NAME.1`. Another download's part is passed over
    /// at once, as before.
    @Test func aContinuingClaimWaitsForItsOwnPartsLingeringLock() throws {
        let dir = TempDirectory()
        let directory = try OutputDirectory(dir.path)
        func holdPart() -> Int32 {
            let fd = open(dir.file("a.bin.part"), O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            #expect(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
            return fd
        }
        var held = holdPart()
        var waits: [UInt32] = []
        let continued = try #require(try Claim.take(
            "a.bin", in: directory, policy: .rename, url: "http://h/a.bin", resume: true, continuing: true,
            wait: { milliseconds in
                waits.append(milliseconds)
                if waits.count == 1 {
                    close(held)  // the forked child execs: the lock goes
                } else {
                    // Another test's child, forked while `held` was open, holds the lock until it execs too: wait
                    // for that, on the lock itself.
                    let fd = open(dir.file("a.bin.part"), O_RDONLY | O_CLOEXEC)
                    _ = flock(fd, LOCK_EX)
                    close(fd)
                }
            }, notice: { _ in }).claim)
        #expect(continued.name == "a.bin")
        #expect(waits.first == 1)
        continued.close()

        held = holdPart()
        defer { close(held) }
        let other = try #require(try Claim.take("a.bin", in: directory, policy: .rename, url: "http://h/a.bin",
                                                resume: true, wait: { _ in Issue.record("waited") },
                                                notice: { _ in }).claim)
        #expect(other.name == "a.1.bin")
        other.close()
    }
}
