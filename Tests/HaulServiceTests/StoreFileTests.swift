import Foundation
import GRDB
import HaulCore
import Testing
import TestSupport
@testable import HaulService

/// `haul.sqlite` on disk: its mode, and the files the store refuses and leaves as they are.
@Suite struct StoreFileTests {
    typealias F = StoreFixtures

    @Test func theDatabaseAndItsWALAreOnlyTheOwners() throws {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        _ = try store.insert(F.job("a"), file: "a", added: F.time(0))
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
        try Store(directory: directory.path).close()
        #expect(chmod(path, 0o644) == 0)
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

    @Test func aTruncatedDatabaseIsRefusedAndLeftByteForByte() throws {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        for n in 0..<200 { _ = try store.insert(F.fullJob(), file: "\(n)", added: F.time(0)) }
        try store.close()
        let whole = try #require(directory.contents("haul.sqlite"))
        let truncated = Array(whole.prefix(whole.count / 2))
        try Data(truncated).write(to: URL(fileURLWithPath: directory.file("haul.sqlite")))

        let error = #expect(throws: StoreError.self) { try Store(directory: directory.path) }
        #expect(error?.kind == .unreadable)
        #expect(error?.message.hasPrefix("haul.sqlite is not a readable database: ") == true)
        #expect(error?.message.hasSuffix("; move it away to start a new queue") == true)
        #expect(error?.message.contains("\n") == false)
        #expect(directory.contents("haul.sqlite") == truncated)
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
        _ = try store.insert(F.job("a"), file: "a", added: F.time(0))
        try store.pool.write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v98'), ('v99')")
            try db.execute(sql: "ALTER TABLE download ADD COLUMN priority INTEGER")
        }
        try store.close()
        let before = try #require(directory.contents("haul.sqlite"))

        let error = #expect(throws: StoreError.self) { try Store(directory: directory.path) }
        #expect(error?.kind == .newerSchema)
        #expect(error?.message == "haul.sqlite was written by a newer haul (schema v99; this haul knows v7); not touching it")
        #expect(directory.contents("haul.sqlite") == before)
    }

    @Test func aFullDiskIsOneLineAndEarlierRowsStay() throws {
        let directory = TempDirectory()
        var store = try Store(directory: directory.path)
        for n in 0..<20 { _ = try store.insert(F.fullJob(), file: "\(n)", added: F.time(Double(n))) }
        let before = try store.all()
        // The writer connection may not grow the database past its present size.
        try store.pool.writeWithoutTransaction { db in
            let pages = try #require(try Int.fetchOne(db, sql: "PRAGMA page_count"))
            _ = try Int.fetchOne(db, sql: "PRAGMA max_page_count = \(pages)")
        }
        var big = F.fullJob()
        big.headers = (0..<16).map { "X-Filler-\($0): " + String(repeating: "f", count: 1000) }
        var inserted = 0
        var failure: StoreError?
        while failure == nil, inserted < 100 {
            do {
                _ = try store.insert(big, file: "big", added: F.time(100))
                inserted += 1
            } catch {
                failure = error
            }
        }
        #expect(failure?.kind == .diskFull)
        #expect(failure?.message == "cannot write the queue: disk full (haul.sqlite)")
        // A failed transaction is rolled back whole: the state change and the removal before the write that
        // did not fit are undone too.
        let refused = #expect(throws: StoreError.self) {
            try store.apply([
                .state(id: 1, .connecting),
                .removed(id: 2),
                .started(id: 3, file: "3", path: "/" + String(repeating: "p", count: 50_000), total: 1),
            ], at: F.time(200))
        }
        #expect(refused?.kind == .diskFull)
        try store.close()

        store = try Store(directory: directory.path)
        let after = try store.all()
        #expect(Array(after.prefix(before.count)) == before)
        #expect(after.count == before.count + inserted)
    }

    @Test func aCrashsLeftoversOpenWithEveryCommittedRow() throws {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        for n in 0..<30 { _ = try store.insert(F.job("\(n)"), file: "\(n)", added: F.time(0)) }
        try store.apply([.state(id: 3, .done)], at: F.time(1))
        let rows = try store.all()
        // As a kill -9 leaves them: the database, a WAL holding the last transactions, the index of the WAL.
        let copy = TempDirectory()
        try withExtendedLifetime(store) {
            for name in ["haul.sqlite", "haul.sqlite-wal", "haul.sqlite-shm"] {
                let bytes = try #require(directory.contents(name))
                try Data(bytes).write(to: URL(fileURLWithPath: copy.file(name)))
            }
        }
        #expect(copy.contents("haul.sqlite-wal")?.isEmpty == false)

        let reopened = try Store(directory: copy.path)
        #expect(try reopened.all() == rows)
    }
}

/// Schema v2 gives every download an aria2 GID, kept across restarts.
struct StoreGIDTests {
    typealias F = StoreFixtures

    @Test func aVersionOneQueueGetsAGIDForEveryRowAndKeepsIt() throws {
        let directory = TempDirectory()
        // A queue as the first release wrote it: the v1 table, two rows.
        let path = directory.path + "/haul.sqlite"
        let old = try DatabaseQueue(path: path)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE download (id INTEGER PRIMARY KEY AUTOINCREMENT, url TEXT NOT NULL, job TEXT NOT NULL,
                    secretsWithheld BOOLEAN NOT NULL, state TEXT NOT NULL, errorCategory TEXT, errorMessage TEXT,
                    file TEXT NOT NULL, path TEXT, completed INTEGER NOT NULL DEFAULT 0, total INTEGER,
                    added INTEGER NOT NULL, started INTEGER, finished INTEGER, seconds REAL);
                INSERT INTO download (url, job, secretsWithheld, state, file, added) VALUES
                    ('https://example.com/a', '{"url":"https://example.com/a","outputDirectory":"/tmp"}', 0, 'done', 'a', 1),
                    ('https://example.com/b', '{"url":"https://example.com/b","outputDirectory":"/tmp"}', 0, 'queued', 'b', 2);
                """)
        }
        try migrator.migrate(old)
        try old.close()
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)

        let store = try Store(directory: directory.path)
        let gids = try store.all().map(\.gid)
        #expect(gids.count == 2 && Set(gids).count == 2)
        #expect(gids.allSatisfy { GID.isValid($0) && $0 == $0.lowercased() })
        let added = try store.insert([(F.job("c"), "c")], gids: ["00000000000000cc"], added: F.time(0))
        try store.close()

        let reopened = try Store(directory: directory.path)
        #expect(try reopened.all().map(\.gid) == gids + ["00000000000000cc"])
        #expect(try reopened.find(added[0])?.gid == "00000000000000cc")
        try reopened.close()
    }
}
