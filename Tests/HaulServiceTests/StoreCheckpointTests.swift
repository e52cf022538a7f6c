import Foundation
import GRDB
import HaulCore
import NIOConcurrencyHelpers
import Testing
import TestSupport
@testable import HaulService

/// `haul.sqlite` holds the queue by itself once the store is closed, and a queue that lost part of itself
/// (its file cut short, its -wal damaged or alone, its tables gone) is refused and left byte for byte, never
/// opened as an empty one.
@Suite struct StoreCheckpointTests {
    typealias F = StoreFixtures

    /// A store of three downloads, closed.
    static func closedStore() throws -> TempDirectory {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        for name in ["a", "b", "c"] { _ = try store.insert(F.job(name), file: name, added: F.time(0)) }
        // A read, as the service's lists make: a reader connection is open beside the writer.
        #expect(try store.count() == 3)
        try store.close()
        return directory
    }

    /// How many downloads `haul.sqlite` holds when it is read alone, without the -wal and -shm beside it.
    static func rowsInTheFileAlone(_ directory: TempDirectory) throws -> Int {
        let copy = TempDirectory()
        let bytes = try #require(directory.contents("haul.sqlite"))
        try Data(bytes).write(to: URL(fileURLWithPath: copy.file("haul.sqlite")))
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: copy.file("haul.sqlite"), configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM download") ?? -1 }
    }

    /// Every file of the directory and its bytes.
    static func snapshot(_ directory: TempDirectory) -> [String: [UInt8]] {
        Dictionary(uniqueKeysWithValues: directory.listing().map { ($0, directory.contents($0) ?? []) })
    }

    static func expectRefused(_ directory: TempDirectory, saying reason: String,
                              sourceLocation: SourceLocation = #_sourceLocation) {
        let before = snapshot(directory)
        var error: StoreError?
        do { _ = try Store(directory: directory.path) } catch let caught { error = caught }
        #expect(error != nil, "opened", sourceLocation: sourceLocation)
        #expect(error?.kind == .unreadable, sourceLocation: sourceLocation)
        #expect(error?.message.contains(reason) == true, "\(error?.message ?? "no error")", sourceLocation: sourceLocation)
        #expect(error?.message.contains("\n") == false, sourceLocation: sourceLocation)
        // Only an empty -wal and SQLite's index of it may appear where there were none (SQLite's read-only
        // look makes them); every byte there was stays.
        var after = snapshot(directory)
        if before["haul.sqlite-shm"] == nil { after["haul.sqlite-shm"] = nil }
        if before["haul.sqlite-wal"] == nil, after["haul.sqlite-wal"] == [] { after["haul.sqlite-wal"] = nil }
        #expect(after == before, "left byte for byte: \(after.mapValues(\.count)) against \(before.mapValues(\.count))",
                sourceLocation: sourceLocation)
    }

    @Test func theClosedFileAloneHoldsTheWholeQueue() throws {
        let directory = try Self.closedStore()
        #expect(directory.listing() == ["haul.sqlite"])
        #expect(try Self.rowsInTheFileAlone(directory) == 3)
    }

    @Test func writesReachTheFileWhileTheStoreIsOpen() throws {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path, checkpointInterval: .zero)
        for name in ["a", "b", "c"] { _ = try store.insert(F.job(name), file: name, added: F.time(0)) }
        // The checkpoint runs on the writer's queue after the write: this waits for it.
        store.pool.writeWithoutTransaction { _ in }
        #expect(try Self.rowsInTheFileAlone(directory) == 3)
        try store.close()
    }

    @Test func anEmptiedFileIsRefused() throws {
        let directory = try Self.closedStore()
        #expect(truncate(directory.file("haul.sqlite"), 0) == 0)
        Self.expectRefused(directory, saying: "haul.sqlite is not a readable database: it is empty")
    }

    @Test func aFileCutShortIsRefused() throws {
        let directory = try Self.closedStore()
        let size = try #require(directory.contents("haul.sqlite")).count
        #expect(truncate(directory.file("haul.sqlite"), off_t(size / 2)) == 0)
        Self.expectRefused(directory, saying: "haul.sqlite is not a readable database: it is cut short")
    }

    @Test func anEmptiedFileBesideItsWALIsRefused() throws {
        // As a kill -9 leaves it: the last transactions in the -wal. Then the file is emptied.
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        for name in ["a", "b", "c"] { _ = try store.insert(F.job(name), file: name, added: F.time(0)) }
        let copy = TempDirectory()
        try withExtendedLifetime(store) {
            for name in ["haul.sqlite-wal", "haul.sqlite-shm"] {
                try Data(try #require(directory.contents(name))).write(to: URL(fileURLWithPath: copy.file(name)))
            }
        }
        #expect(FileManager.default.createFile(atPath: copy.file("haul.sqlite"), contents: nil,
                                               attributes: [.posixPermissions: 0o600]))
        #expect(copy.contents("haul.sqlite-wal")?.isEmpty == false)
        Self.expectRefused(copy, saying: "it is empty")
    }

    @Test func garbageInTheWALIsRefused() throws {
        let directory = try Self.closedStore()
        var random = SplitMix64(seed: 72)
        let garbage = (0..<8192).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        #expect(FileManager.default.createFile(atPath: directory.file("haul.sqlite-wal"), contents: Data(garbage),
                                               attributes: [.posixPermissions: 0o600]))
        Self.expectRefused(directory, saying: "haul.sqlite-wal is not a readable write-ahead log")
    }

    @Test func aDamagedHeaderOfALiveWALIsRefused() throws {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        for name in ["a", "b", "c"] { _ = try store.insert(F.job(name), file: name, added: F.time(0)) }
        let copy = TempDirectory()
        try withExtendedLifetime(store) {
            for name in ["haul.sqlite", "haul.sqlite-wal"] {
                try Data(try #require(directory.contents(name))).write(to: URL(fileURLWithPath: copy.file(name)))
            }
        }
        var wal = try #require(copy.contents("haul.sqlite-wal"))
        wal[17] ^= 0xff  // a salt: the header's checksum no longer matches
        try Data(wal).write(to: URL(fileURLWithPath: copy.file("haul.sqlite-wal")))
        Self.expectRefused(copy, saying: "haul.sqlite-wal is not a readable write-ahead log: its header is damaged")
    }

    @Test func aWALWithoutItsFileIsRefusedAndNoFileIsMade() throws {
        let directory = try Self.closedStore()
        #expect(FileManager.default.createFile(atPath: directory.file("haul.sqlite-wal"),
                                               contents: Data(repeating: 1, count: 4096)))
        #expect(unlink(directory.file("haul.sqlite")) == 0)
        Self.expectRefused(directory, saying: "haul.sqlite is missing but haul.sqlite-wal holds 4096 bytes")
        #expect(directory.listing() == ["haul.sqlite-wal"])
    }

    @Test func aDatabaseWhoseTablesAreMissingIsRefused() throws {
        // What the file alone was before checkpoints: a WAL-mode header page, no tables.
        let directory = TempDirectory()
        let path = directory.file("haul.sqlite")
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") }
        try queue.close()
        #expect(chmod(path, 0o600) == 0)
        Self.expectRefused(directory, saying: "its tables are missing")
    }

    @Test func aNewStoreIsMadeWholeUnderItsName() throws {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        #expect(try store.count() == 0)
        try store.close()
        #expect(directory.listing() == ["haul.sqlite"])
        #expect(F.mode(of: directory.file("haul.sqlite")) == 0o600)
        #expect(try Self.rowsInTheFileAlone(directory) == 0)
        // Opened again: the same (empty) queue, not refused.
        let reopened = try Store(directory: directory.path)
        #expect(try reopened.count() == 0)
        try reopened.close()
    }
}

/// A store whose file cannot be written (here: immutable, which stops root too) reads, refuses writes in
/// one line, keeps the facts it could not store, and writes again once the file can be written.
@Suite(.enabled(if: ImmutableFiles.work)) struct StoreReadOnlyTests {
    typealias F = StoreFixtures
    typealias I = ImmutableFiles

    @Test func aReadOnlyStoreWritesAgainOnceWritable() throws {
        let directory = try StoreCheckpointTests.closedStore()
        let file = directory.file("haul.sqlite")
        #expect(I.chattr("+i", file))
        defer { I.chattr("-i", file) }

        let store = try Store(directory: directory.path)
        #expect(try store.count() == 3)
        let error = #expect(throws: StoreError.self) { try store.insert(F.job("d"), file: "d", added: F.time(1)) }
        #expect(error?.kind == .readOnly)
        #expect(error?.message == "cannot write the queue: haul.sqlite cannot be written (read-only)")
        #expect(store.writeProblem?.hasPrefix("haul.sqlite cannot be written (read-only)") == true)

        // The service's writer keeps what it could not store.
        let wall = WallClock(F.time(2))
        var writer = StoreWriter(store: store, clock: ManualClock(), now: { wall.now })
        #expect(throws: StoreError.self) { try writer.record([.state(id: 1, .connecting), .state(id: 2, .cancelled)]) }
        #expect(writer.unwrittenCount == 2)
        #expect(throws: StoreError.self) { try writer.flushDue() }
        #expect(writer.unwrittenCount == 2)

        wall.now = F.time(9)
        #expect(I.chattr("-i", file))
        #expect(store.writeProblem == nil)
        try writer.flushDue()
        #expect(writer.unwrittenCount == 0)
        #expect(try store.find(1)?.state == .connecting)
        #expect(try store.find(2)?.state == .cancelled)
        // At the time they happened, not when they could be written.
        #expect(try store.find(1)?.started == F.time(2))
        #expect(try store.find(2)?.finished == F.time(2))
        let added = try store.insert(F.job("d"), file: "d", added: F.time(3))
        #expect(try store.find(added)?.file == "d")
        try store.close()
        #expect(try StoreCheckpointTests.rowsInTheFileAlone(directory) == 4)
    }
}

/// A wall clock a test sets.
final class WallClock: Sendable {
    private let time: NIOLockedValueBox<Date>
    init(_ time: Date) { self.time = NIOLockedValueBox(time) }
    var now: Date {
        get { time.withLockedValue { $0 } }
        set { time.withLockedValue { $0 = newValue } }
    }
}

/// Files made immutable with `chattr`, which stops root too.
enum ImmutableFiles {
    /// `chattr` can make a file here immutable (ext4, as root).
    static let work: Bool = {
        let directory = TempDirectory()
        let file = directory.file("probe")
        guard FileManager.default.createFile(atPath: file, contents: nil), chattr("+i", file) else { return false }
        defer { _ = chattr("-i", file) }
        return open(file, O_WRONLY | O_CLOEXEC) < 0
    }()

    @discardableResult
    static func chattr(_ flag: String, _ path: String) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
        process.arguments = [flag, path]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}
