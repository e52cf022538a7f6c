import Foundation
import GRDB
import Testing
import TestSupport
@testable import HaulService

/// `haul.sqlite` on disk: its mode, and the files the store refuses and leaves as they are.
@Suite struct StoreFileTests {
    typealias F = StoreFixtures

    @Test func theDatabaseAndItsWALAreOnlyTheOwners() throws {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        // While it is open: its -wal and -shm exist.
        withExtendedLifetime(store) {
            #expect(F.mode(of: directory.file("haul.sqlite")) == 0o600)
            #expect(F.mode(of: directory.file("haul.sqlite-wal")) == 0o600)
            #expect(F.mode(of: directory.file("haul.sqlite-shm")) == 0o600)
        }
    }

    @Test func anExistingFileReadableByOthersIsMadePrivate() throws {
        let directory = TempDirectory()
        let path = directory.file("haul.sqlite")
        #expect(FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o644]))
        #expect(F.mode(of: path) == 0o644)
        _ = try Store(directory: directory.path)
        #expect(F.mode(of: path) == 0o600)
    }

    @Test func aMissingDirectoryIsNotCreated() throws {
        let directory = TempDirectory()
        let error = #expect(throws: StoreError.self) { try Store(directory: directory.file("absent")) }
        #expect(error?.kind == .file)
        #expect(error?.message == "cannot open the queue: no directory \(directory.file("absent"))")
        #expect(directory.listing().isEmpty)
    }

    @Test func randomBytesAreRefusedAndLeftByteForByte() throws {
        let directory = TempDirectory()
        var random = SplitMix64(seed: 7)
        let garbage = (0..<8192).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        try Data(garbage).write(to: URL(fileURLWithPath: directory.file("haul.sqlite")))

        let error = #expect(throws: StoreError.self) { try Store(directory: directory.path) }
        #expect(error?.kind == .unreadable)
        #expect(error?.message == "haul.sqlite is not a readable database: file is not a database; "
            + "move it away to start a new queue")
        #expect(directory.contents("haul.sqlite") == garbage)
        #expect(directory.listing() == ["haul.sqlite"])
    }

    @Test func anotherProgramsDatabaseIsRefused() throws {
        let directory = TempDirectory()
        let path = directory.file("haul.sqlite")
        let other = try DatabaseQueue(path: path)
        try other.write { db in try db.execute(sql: "CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine')") }
        try other.close()
        let before = directory.contents("haul.sqlite")

        let error = #expect(throws: StoreError.self) { try Store(directory: directory.path) }
        #expect(error?.kind == .unreadable)
        #expect(error?.message == "haul.sqlite is not a readable database: it holds tables but no haul schema "
            + "(not haul's); move it away to start a new queue")
        #expect(directory.contents("haul.sqlite") == before)
    }

    @Test func aNewerSchemaIsRefusedAndLeftIntact() throws {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        try store.pool.write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v2'), ('v3')")
            try db.execute(sql: "ALTER TABLE download ADD COLUMN gid TEXT")
        }
        try store.close()
        let before = try #require(directory.contents("haul.sqlite"))

        let error = #expect(throws: StoreError.self) { try Store(directory: directory.path) }
        #expect(error?.kind == .newerSchema)
        #expect(error?.message == "haul.sqlite was written by a newer haul (schema v3; this haul knows v1); not touching it")
        #expect(directory.contents("haul.sqlite") == before)
    }
}
