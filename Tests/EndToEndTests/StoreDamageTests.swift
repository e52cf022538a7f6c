import Foundation
import GRDB
import HaulCore
import SampleServer
import Testing
import TestSupport

/// The queue's file as users treat it: `haul.sqlite` alone holds the queue once the service stopped (a copy is
/// a backup), a damaged one is refused in one line and left byte for byte (never listed as an empty queue),
/// and one that could not be written takes adds again once it can, keeping what happened meanwhile.
@Suite(.serialized) struct StoreDamageTests {
    static func haul(_ arguments: [String], _ home: ServiceHome, in dir: TempDirectory) async throws -> HaulProcess.Exit {
        try await HaulProcess.run(arguments, in: dir.path, environment: home.environment)
    }

    /// Three finished downloads in `home`'s queue, the service stopped.
    static func stoppedQueueOfThree(_ home: ServiceHome, in dir: TempDirectory) async throws {
        try await withSampleServer { server in
            let add = try await haul(["add", "-o", "out", server.downloadURL("small.bin"), server.downloadURL("medium.bin"),
                                      server.downloadURL("large.bin")], home, in: dir)
            #expect(add.status == 0, "\(add.stderr)")
            try await SessionTests.waitFor("three done", home, within: 120) { seen in
                (1...3).allSatisfy { seen[$0]?.state == .done }
            }
        }
        let stop = try await haul(["service", "stop"], home, in: dir)
        #expect(stop.status == 0, "\(stop.stderr)")
    }

    /// The rows of `haul.sqlite` read alone, from a copy without its -wal and -shm: (id, state, completed).
    static func rowsOfTheFileAlone(_ home: ServiceHome) throws -> [(Int, String, Int64)] {
        let copy = TempDirectory()
        try FileManager.default.copyItem(atPath: home.path + "/haul.sqlite", toPath: copy.file("haul.sqlite"))
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: copy.file("haul.sqlite"), configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT id, state, completed FROM download ORDER BY id").map {
                ($0["id"], $0["state"], $0["completed"])
            }
        }
    }

    /// The store's files (`haul.sqlite`, its -wal) and their bytes.
    static func storeFiles(_ home: ServiceHome) -> [String: Data] {
        var files: [String: Data] = [:]
        for name in ["haul.sqlite", "haul.sqlite-wal"] {
            if let data = FileManager.default.contents(atPath: home.path + "/" + name) { files[name] = data }
        }
        return files
    }

    /// `haul ls` on a damaged queue: exit 1, one line saying `reason`, the files as they were, and no
    /// service left running.
    static func expectRefused(_ home: ServiceHome, in dir: TempDirectory, saying reason: String,
                              sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let before = storeFiles(home)
        let list = try await haul(["ls"], home, in: dir)
        #expect(list.status == 1, "\(list)", sourceLocation: sourceLocation)
        #expect(list.stdout.isEmpty, "no queue listed: \(list.stdout)", sourceLocation: sourceLocation)
        #expect(list.stderr.hasPrefix("haul: the service could not start: ") && list.stderr.contains(reason),
                "\(list.stderr)", sourceLocation: sourceLocation)
        #expect(list.stderr.split(separator: "\n").count == 1, "\(list.stderr)", sourceLocation: sourceLocation)
        var after = storeFiles(home)
        // An empty -wal where there was none is SQLite's read-only look, not a change to the queue.
        if before["haul.sqlite-wal"] == nil, after["haul.sqlite-wal"]?.isEmpty == true { after["haul.sqlite-wal"] = nil }
        #expect(after == before, "byte for byte: \(after.mapValues(\.count)) against \(before.mapValues(\.count))",
                sourceLocation: sourceLocation)
        let status = try await haul(["service", "status"], home, in: dir)
        #expect(status.stdout.hasPrefix("haul service: not running"), "\(status)", sourceLocation: sourceLocation)
    }

    @Test func afterAStopTheFileAloneHoldsTheWholeQueue() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        try await Self.stoppedQueueOfThree(home, in: dir)
        let wal = FileManager.default.contents(atPath: home.path + "/haul.sqlite-wal")
        #expect(wal == nil || wal?.isEmpty == true, "the -wal was copied into the file: \(wal?.count ?? 0) bytes left")
        let rows = try Self.rowsOfTheFileAlone(home)
        #expect(rows.map(\.0) == [1, 2, 3])
        #expect(rows.map(\.1) == ["done", "done", "done"])
    }

    @Test func aQueueFileEmptiedAfterAStopIsRefused() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        try await Self.stoppedQueueOfThree(home, in: dir)
        #expect(truncate(home.path + "/haul.sqlite", 0) == 0)
        try await Self.expectRefused(home, in: dir, saying: "haul.sqlite is not a readable database: it is empty")
    }

    @Test func aQueueFileCutShortAfterAStopIsRefused() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        try await Self.stoppedQueueOfThree(home, in: dir)
        #expect(truncate(home.path + "/haul.sqlite", 4096) == 0)
        try await Self.expectRefused(home, in: dir, saying: "haul.sqlite is not a readable database")
    }

    @Test func garbageInTheWALIsRefused() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        try await Self.stoppedQueueOfThree(home, in: dir)
        var random = SplitMix64(seed: 9)
        let garbage = Data((0..<16384).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        try garbage.write(to: URL(fileURLWithPath: home.path + "/haul.sqlite-wal"))
        #expect(chmod(home.path + "/haul.sqlite-wal", 0o600) == 0)
        try await Self.expectRefused(home, in: dir, saying: "haul.sqlite-wal is not a readable write-ahead log")
    }

    /// The store made immutable (`chattr +i`, which stops root too) while a download waits in the queue: the
    /// service starts and runs it, an add fails in one line, `ls` and `status` say the queue cannot be written;
    /// made writable again, adds work at once and the download's end, which happened meanwhile, is stored.
    @Test(.enabled(if: Immutable.works)) func aQueueMadeWritableAgainTakesAddsAndKeepsWhatHappened() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        let file = home.path + "/haul.sqlite"
        // 4 MiB/s per connection: medium.bin takes 5 s, stopped mid-way.
        try await withSampleServer(rate: 4 << 20) { server in
            #expect(try await Self.haul(["add", "-o", "out", server.downloadURL("medium.bin")], home, in: dir).status == 0)
            try await SessionTests.waitFor("part of medium.bin", home) { ($0[1]?.completed ?? 0) >= 1 << 20 }
            #expect(try await Self.haul(["service", "stop"], home, in: dir).status == 0)

            #expect(Immutable.set(true, file))
            defer { Immutable.set(false, file) }
            server.setRate(nil)
            // Any client starts the service; the stored download continues (and ends while the file is immutable).
            let list = try await Self.haul(["ls"], home, in: dir)
            #expect(list.status == 0, "\(list)")
            #expect(list.stdoutLines.count == 2 && list.stdoutLines[1].hasSuffix("medium.bin"), "\(list)")
            #expect(list.stderr == "haul: haul.sqlite cannot be written (read-only): adds fail, and changes wait in "
                + "memory until it can\n")
            let add = try await Self.haul(["add", "-o", "out", server.downloadURL("small.bin")], home, in: dir)
            #expect(add.status == 1)
            #expect(add.stderr == "haul: the service: cannot write the queue: haul.sqlite cannot be written (read-only)\n")
            let status = try await Self.haul(["service", "status"], home, in: dir)
            #expect(status.stdoutLines.last == "haul service: haul.sqlite cannot be written (read-only): adds fail, "
                + "and changes wait in memory until it can", "\(status)")
            try await SessionTests.waitFor("medium.bin done", home) { $0[1]?.state == .done }

            #expect(Immutable.set(false, file))
            let again = try await Self.haul(["add", "-o", "out", server.downloadURL("small.bin")], home, in: dir)
            #expect(again.status == 0, "\(again)")
            #expect(again.stdoutLines == ["2 small.bin"])
            let quiet = try await Self.haul(["ls"], home, in: dir)
            #expect(quiet.stderr.isEmpty, "\(quiet.stderr)")
            try await SessionTests.waitFor("small.bin done", home) { $0[2]?.state == .done }
        }
        #expect(try await Self.haul(["service", "stop"], home, in: dir).status == 0)
        let rows = try Self.rowsOfTheFileAlone(home)
        #expect(rows.map(\.0) == [1, 2])
        #expect(rows.map(\.1) == ["done", "done"], "the end that came while the file was immutable is stored")
        #expect(rows.first?.2 == 20 << 20)
        let log = try String(contentsOfFile: home.path + "/service.log", encoding: .utf8)
        #expect(log.contains("haul service: haul.sqlite can be written again; what waited is stored"), "\(log)")
    }
}

/// `chattr +i`: a file not even root may open for writing (ext4 and most local file systems).
enum Immutable {
    static let works: Bool = {
        let directory = TempDirectory()
        let file = directory.file("probe")
        guard FileManager.default.createFile(atPath: file, contents: nil), set(true, file) else { return false }
        defer { set(false, file) }
        return open(file, O_WRONLY | O_CLOEXEC) < 0
    }()

    @discardableResult
    static func set(_ immutable: Bool, _ path: String) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
        process.arguments = [immutable ? "+i" : "-i", path]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}
