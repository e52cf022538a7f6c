import Foundation
import GRDB
@testable import HaulCore
import Testing
import TestSupport
import HaulServiceClient
@testable import HaulService

/// The store's rows: what insert and the manager's events write, and what reads give back.
@Suite struct StoreTests {
    typealias F = StoreFixtures

    @Test func aFullJobRoundTrips() throws {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        let job = F.fullJob()
        let id = try store.insert(job, file: "archive-v2.tar.gz", added: F.time(0.25))

        let rows = try store.all()
        #expect(rows.count == 1)
        let row = try #require(rows.first)
        #expect(row.id == id)
        #expect(try row.job == job)
        #expect(row.url == job.url)
        #expect(!row.secretsWithheld)
        #expect(row.state == .queued)
        #expect(row.file == "archive-v2.tar.gz")
        #expect(row.path == nil)
        #expect(row.completed == 0)
        #expect(row.total == nil)
        #expect(row.added == F.time(0.25))
        #expect(row.started == nil && row.finished == nil && row.seconds == nil)
        #expect(try store.find(id) == row)
        #expect(try store.count() == 1)
    }

    /// A download given a new address while stopped (`haul refresh`, aria2's `changeUri`) or new options
    /// (`changeOption`) keeps them across a restart: the store's job is replaced (its secrets withheld as on
    /// insert), and a store opened anew reads it.
    @Test func aReplacedJobIsWhatARestartReads() throws {
        let directory = TempDirectory()
        var job = F.job("v.mp4")
        let id = try Store(directory: directory.path).insert(job, file: "v.mp4", added: F.time(0))
        job.originURL = job.url
        job.sources = [DownloadSource(url: "https://cdn.example/v.mp4?sig=new"), DownloadSource(url: "https://m.example/v.mp4")]
        let store = try Store(directory: directory.path)
        try store.replaceJob(of: id, with: job)
        let reopened = try #require(try Store(directory: directory.path).find(id))
        #expect(try reopened.job == job && reopened.url == "https://cdn.example/v.mp4?sig=new")
        #expect(!reopened.secretsWithheld)
    }

    @Test func stateChangesRecordWhenRunsStartAndEnd() throws {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        let id = try store.insert(F.job("a.bin"), file: "a.bin", added: F.time(0))

        try store.apply([.state(id: id, .connecting)], at: F.time(1))
        var row = try #require(try store.find(id))
        #expect(row.state == .connecting)
        #expect(row.started == F.time(1))
        #expect(row.finished == nil)

        try store.apply([.state(id: id, .downloading)], at: F.time(2))
        row = try #require(try store.find(id))
        #expect(row.state == .downloading)
        #expect(row.started == F.time(1))

        try store.apply([.state(id: id, .cancelled)], at: F.time(3))
        row = try #require(try store.find(id))
        #expect(row.state == .cancelled)
        #expect(row.finished == F.time(3))

        // A retry: queued again (no end time), then a new run.
        try store.apply([.state(id: id, .queued), .state(id: id, .connecting)], at: F.time(4))
        row = try #require(try store.find(id))
        #expect(row.state == .connecting)
        #expect(row.started == F.time(4))
        #expect(row.finished == nil)

        try store.apply([.state(id: id, .paused)], at: F.time(5))
        row = try #require(try store.find(id))
        #expect(row.state == .paused)
        #expect(row.finished == nil)

        try store.apply([.state(id: id, .queued), .state(id: id, .connecting), .state(id: id, .done)], at: F.time(6))
        row = try #require(try store.find(id))
        #expect(row.state == .done)
        #expect(row.started == F.time(6))
        #expect(row.finished == F.time(6))
    }

    @Test func aFailureKeepsItsCategoryAndMessageUntilARetry() throws {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        let id = try store.insert(F.job("b.bin"), file: "b.bin", added: F.time(0))
        let error = HaulError(.server, "server answered 503 Service Unavailable", httpStatus: 503)

        try store.apply([.state(id: id, .connecting), .state(id: id, .failed(error))], at: F.time(2))
        var row = try #require(try store.find(id))
        // Only category, message and reason are stored (the status as the reason, not as `httpStatus`).
        #expect(row.state == .failed(HaulError(.server, "server answered 503 Service Unavailable",
                                               reason: .httpStatus(503))))
        #expect(row.finished == F.time(2))

        try store.apply([.state(id: id, .queued)], at: F.time(3))
        row = try #require(try store.find(id))
        #expect(row.state == .queued)
        #expect(row.finished == nil)
        let raw = try store.pool.read { db in
            try Row.fetchOne(db, sql: "SELECT errorCategory, errorMessage FROM download WHERE id = ?", arguments: [id])
        }
        #expect(raw?["errorCategory"] == nil as String?)
        #expect(raw?["errorMessage"] == nil as String?)
    }

    @Test func startedProgressAndFinishedWriteTheFile() throws {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        let id = try store.insert(F.job("c.iso"), file: "c.iso", added: F.time(0))

        try store.apply([
            .state(id: id, .connecting),
            .started(id: id, file: "c.1.iso", path: "/tmp/out/c.1.iso", total: 5000),
            .state(id: id, .downloading),
            .progress(id: id, DownloadProgress(completed: 1200, batchBytes: 1200, total: nil, bytesPerSecond: 10)),
        ], at: F.time(1))
        var row = try #require(try store.find(id))
        #expect(row.file == "c.1.iso")
        #expect(row.path == "/tmp/out/c.1.iso")
        #expect(row.completed == 1200)
        #expect(row.total == 5000)

        try store.apply([
            .finished(id: id, DownloadResult(file: "c.1.iso", path: "/tmp/out/c.1.iso", bytes: 5000, skipped: false),
                      seconds: 2.5),
            .state(id: id, .done),
        ], at: F.time(3))
        row = try #require(try store.find(id))
        #expect(row.state == .done)
        #expect(row.completed == 5000)
        #expect(row.total == 5000)
        #expect(row.seconds == 2.5)
        #expect(row.finished == F.time(3))
    }

    @Test func removalDeletesRowsAndIdsAreNeverReused() throws {
        let directory = TempDirectory()
        var store = try Store(directory: directory.path)
        let ids = try (1...4).map { try store.insert(F.job("\($0)"), file: "\($0)", added: F.time(0)) }
        #expect(ids == [1, 2, 3, 4])

        try store.apply([.removed(id: 4)], at: F.time(1))
        #expect(try store.remove([3, 99]) == 1)
        #expect(try store.all().map(\.id) == [1, 2])
        #expect(try store.count() == 2)
        #expect(try store.find(4) == nil)

        try store.close()
        store = try Store(directory: directory.path)
        #expect(try store.insert(F.job("5"), file: "5", added: F.time(2)) == 5)
    }

    @Test func everythingSurvivesClosingAndReopening() throws {
        let directory = TempDirectory()
        var store = try Store(directory: directory.path)
        let first = try store.insert(F.fullJob(), file: "archive-v2.tar.gz", added: F.time(0))
        let second = try store.insert(F.job("d.bin"), file: "d.bin", added: F.time(1))
        try store.apply([
            .state(id: first, .connecting),
            .started(id: first, file: "archive-v2.tar.gz", path: "/home/user/Downloads/archive-v2.tar.gz", total: 10),
            .finished(id: first, DownloadResult(file: "archive-v2.tar.gz", path: "/home/user/Downloads/archive-v2.tar.gz",
                                                bytes: 10, skipped: false), seconds: 0.5),
            .state(id: first, .done),
            .state(id: second, .failed(HaulError(.network, "connection refused"))),
        ], at: F.time(2))
        let before = try store.all()
        try store.close()

        store = try Store(directory: directory.path)
        let after = try store.all()
        #expect(after == before)
        #expect(after.map(\.state) == [.done, .failed(HaulError(.network, "connection refused"))])
        #expect(try after[0].job == F.fullJob())
    }

    @Test func unfinishedAreTheQueuedConnectingAndDownloadingOnes() throws {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        let states: [DownloadState] = [.queued, .done, .connecting, .paused, .downloading,
                                       .failed(HaulError(.network, "timed out")), .cancelled, .queued]
        for (index, state) in states.enumerated() {
            let id = try store.insert(F.job("\(index)"), file: "\(index)", added: F.time(0))
            try store.apply([.state(id: id, state)], at: F.time(1))
        }
        #expect(try store.unfinished().map(\.id) == [1, 3, 5, 8])
        #expect(try store.unfinished().map(\.state) == [.queued, .connecting, .downloading, .queued])
    }

    @Test func eventsForAnotherIdLeaveARowAlone() throws {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        let id = try store.insert(F.job("e"), file: "e", added: F.time(0))
        let before = try store.all()
        try store.apply([
            .added(id: 7, url: "https://example.com/x", file: "x"),
            .state(id: 7, .done),
            .fact(id: id, .resumeRefused(part: "a.bin.part", reason: .rangeIgnored(status: 200))),
            .progress(id: 7, DownloadProgress(completed: 5, batchBytes: 5, total: 9, bytesPerSecond: 1)),
        ], at: F.time(1))
        #expect(try store.all() == before)
    }
}

extension StoreTests {
    /// A resumed run's result counts only its own bytes; the row keeps the whole file's.
    @Test func aResumedDownloadIsStoredWhole() throws {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        let id = try store.insert(DownloadJob(url: "http://h/r.bin", outputDirectory: "/tmp/out"), file: "r.bin", added: Date())
        try store.apply([
            .started(id: id, file: "r.bin", path: "/tmp/out/r.bin", total: 8000),
            .progress(id: id, DownloadProgress(completed: 6000, batchBytes: 6000, total: 8000, bytesPerSecond: 1)),
            .finished(id: id, DownloadResult(file: "r.bin", path: "/tmp/out/r.bin", bytes: 2000, skipped: false), seconds: 1),
            .state(id: id, .done),
        ], at: Date())
        let row = try #require(try store.find(id))
        #expect(row.completed == 8000 && row.total == 8000)
    }
}

/// What a service finds when it starts from the store a killed one left.
@Suite struct RestoreTests {
    typealias F = StoreFixtures

    /// Killed between a download's rename and its "done": the file at its path is its part, renamed (the
    /// same device and inode), so it is done, not fetched again under the next free name (a kill -9 while
    /// small files finished left one to five of them twice, one copy named by no entry). A file at the name
    /// that is not the part, or a part still there, is continued as before.
    @Test func aDownloadRenamedBeforeItsDoneWasStoredIsDone() async throws {
        let state = TempDirectory()
        let out = TempDirectory()
        let store = try Store(directory: state.path)
        let renamed = try store.insert(F.job("a.bin"), file: "a.bin", added: F.time(0))
        let elsewhere = try store.insert(F.job("b.bin"), file: "b.bin", added: F.time(0))
        let running = try store.insert(F.job("c.bin"), file: "c.bin", added: F.time(0))
        for name in ["a.bin", "b.bin", "c.bin.part"] {
            try Data(repeating: 7, count: 1000).write(to: URL(fileURLWithPath: out.file(name)))
        }
        // b.bin's part was another file (the name now holds something else); c.bin's part is still there.
        try Data(repeating: 1, count: 10).write(to: URL(fileURLWithPath: out.file("other")))
        try store.apply([
            .state(id: renamed, .downloading),
            .started(id: renamed, file: "a.bin", path: out.file("a.bin"), total: 1000, part: FileIdentity.of(out.file("a.bin"))),
            .state(id: elsewhere, .downloading),
            .started(id: elsewhere, file: "b.bin", path: out.file("b.bin"), total: 1000, part: FileIdentity.of(out.file("other"))),
            .state(id: running, .downloading),
            .started(id: running, file: "c.bin", path: out.file("c.bin"), total: 1000,
                     part: FileIdentity.of(out.file("c.bin.part"))),
        ], at: F.time(1))
        let service = Service(configuration: .init(directory: StateDirectory(path: state.path)), store: store)
        let continued = try await service.restore()
        #expect(continued == [elsewhere, running])
        let row = try #require(try store.find(renamed))
        #expect(row.state == .done)
        #expect(row.completed == 1000 && row.total == 1000)
        #expect(await service.roster[renamed]?.state == .done)
        await service.manager.cancelAll()
    }
    /// The same kill, with an `--on-complete` hook: a hook starts only once the store holds "done", so the
    /// killed service never ran it, and the next one runs it, once, when it finds the download done.
    @Test func theHookOfADownloadFoundDoneRunsOnce() async throws {
        let state = TempDirectory()
        let out = TempDirectory()
        let store = try Store(directory: state.path)
        var job = F.job("a.bin")
        let marker = out.file("hook-ran")
        job.onComplete = Hook(command: "echo \"$HAUL_STATUS $HAUL_SIZE $HAUL_FILE\" >> '\(marker)'", shell: true)
        let renamed = try store.insert(job, file: "a.bin", added: F.time(0))
        try Data(repeating: 7, count: 1000).write(to: URL(fileURLWithPath: out.file("a.bin")))
        try store.apply([
            .state(id: renamed, .downloading),
            .started(id: renamed, file: "a.bin", path: out.file("a.bin"), total: 1000, part: FileIdentity.of(out.file("a.bin"))),
        ], at: F.time(1))
        let service = Service(configuration: .init(directory: StateDirectory(path: state.path)), store: store)
        _ = try await service.restore()
        await service.manager.waitForHooks()
        #expect(try String(contentsOfFile: marker, encoding: .utf8) == "done 1000 \(out.file("a.bin"))\n")

        // Restored again (the row now says done): history, and no second run.
        let again = Service(configuration: .init(directory: StateDirectory(path: state.path)), store: store)
        _ = try await again.restore()
        await again.manager.waitForHooks()
        #expect(try String(contentsOfFile: marker, encoding: .utf8) == "done 1000 \(out.file("a.bin"))\n")
        await service.manager.cancelAll()
        await again.manager.cancelAll()
    }
}
