import Foundation
import GRDB
import HaulCore

/// The queue and its history in `STATE/haul.sqlite` (mode 0600), written by the service alone from the
/// manager's events (through `StoreWriter`) and read for `ls` and on start.
///
/// A `DatabasePool` in WAL mode with GRDB's `synchronous = NORMAL`: every committed transaction survives
/// the process being killed (kill -9); a power cut may lose the last ones before a checkpoint. Readers never
/// wait for the writer. Every call is synchronous (blocking file I/O: call it off the cooperative pool) and
/// throws only `StoreError`, whose message is one line.
///
/// A file this build must not write is refused, never deleted, replaced or migrated over: one that is not a
/// readable database (`.unreadable`), and one a newer haul migrated (`.newerSchema`).
final class Store: Sendable {
    static let fileName = "haul.sqlite"

    /// The database file.
    let path: String
    /// Internal for tests, which use it to constrain the writer connection.
    let pool: DatabasePool

    /// Opens (creating if absent) `directory/haul.sqlite` and brings its schema up to this build's.
    /// The directory exists already (the service makes it, mode 0700).
    init(directory: String) throws(StoreError) {
        path = directory.hasSuffix("/") ? directory + Self.fileName : directory + "/" + Self.fileName
        try StoreFile.prepare(path, in: directory)
        try StoreFile.check(path)
        var configuration = Configuration()
        configuration.label = Self.fileName
        configuration.foreignKeysEnabled = true
        // Only the service writes; a wait would be another process reading (the sqlite3 shell).
        configuration.busyMode = .timeout(5)
        configuration.maximumReaderCount = 2
        let path = path
        pool = try storeOperation("cannot open the queue") {
            try DatabasePool(path: path, configuration: configuration)
        }
        try storeOperation("cannot open the queue") { [pool] in try StoreSchema.migrator.migrate(pool) }
    }

    /// Checkpoints the WAL into the file and closes every connection; the store is unusable afterwards.
    func close() throws(StoreError) {
        try storeOperation("cannot close the queue") { try pool.close() }
    }

    // MARK: writes

    /// Stores a new queued download and returns its id, the user's handle on it from now on.
    /// `job` is stored without its secrets (see `WithheldJob`).
    func insert(_ job: DownloadJob, file: String, added: Date) throws(StoreError) -> DownloadID {
        try insert([(job, file)], added: added)[0]
    }

    /// Stores several new downloads in one transaction (all or none), in order; their ids. `gids` (one per
    /// job, unique) are their aria2 GIDs; random ones when nil.
    func insert(_ jobs: [(job: DownloadJob, file: String)], gids: [String]? = nil,
                added: Date) throws(StoreError) -> [DownloadID] {
        var rows: [(withheld: WithheldJob, json: String, file: String, gid: String)] = []
        rows.reserveCapacity(jobs.count)
        var encoder = WithheldJob.Encoder()
        for (index, (job, file)) in jobs.enumerated() {
            let withheld = WithheldJob(job)
            rows.append((withheld, try encoder.encode(withheld), file, gids?[index] ?? GID.random()))
        }
        return try write { db in
            let statement = try db.cachedStatement(sql: """
                INSERT INTO download (url, job, secretsWithheld, state, file, added, gid) VALUES (?, ?, ?, ?, ?, ?, ?)
                """)
            var ids: [DownloadID] = []
            ids.reserveCapacity(rows.count)
            for row in rows {
                try statement.execute(arguments: [row.withheld.job.url, row.json, row.withheld.secretsWithheld,
                                                  DownloadState.queued.storedName, row.file, added.unixMilliseconds,
                                                  row.gid])
                ids.append(DownloadID(db.lastInsertedRowID))
            }
            return ids
        }
    }

    /// Writes `events`, which happened at `time`, in one transaction: all of them or, on an error,
    /// none. Progress is written as it comes; `StoreWriter` is what keeps it to once a second.
    func apply(_ events: [ManagerEvent], at time: Date) throws(StoreError) {
        guard !events.isEmpty else { return }
        let milliseconds = time.unixMilliseconds
        try write { db in
            for event in events { try Self.apply(event, at: milliseconds, in: db) }
        }
    }

    /// Forgets these downloads (files on disk are not the store's business); returns how many rows went.
    @discardableResult
    func remove(_ ids: [DownloadID]) throws(StoreError) -> Int {
        try write { db in try StoredDownload.deleteAll(db, keys: ids) }
    }

    private static func apply(_ event: ManagerEvent, at time: Int64, in db: Database) throws {
        switch event {
        case .added:
            // `insert` stored it, with the job the event does not carry.
            break
        case .state(let id, let state):
            var category: String?
            var message: String?
            if case .failed(let error) = state {
                category = error.category.rawValue
                message = error.message
            }
            try db.cachedStatement(sql: """
                UPDATE download SET state = ?, errorCategory = ?, errorMessage = ?,
                    started = CASE WHEN ? THEN ? ELSE started END, finished = ?
                WHERE id = ?
                """).execute(arguments: [state.storedName, category, message,
                                         state == .connecting, time, state.endsRun ? time : nil, id])
        case .started(let id, let file, let path, let total, let part):
            try db.cachedStatement(sql: "UPDATE download SET file = ?, path = ?, total = ?, part = ? WHERE id = ?")
                .execute(arguments: [file, path, total, part, id])
        case .progress(let id, let progress):
            try db.cachedStatement(sql: "UPDATE download SET completed = ?, total = coalesce(?, total) WHERE id = ?")
                .execute(arguments: [progress.completed, progress.total, id])
        case .fact:
            // Told to the front ends, not kept.
            break
        case .finished(let id, let result, let seconds):
            // `bytes` are this run's: a resumed file is its known total (or at least what was already on disk).
            try db.cachedStatement(sql: """
                UPDATE download SET file = ?1, path = ?2, completed = COALESCE(total, MAX(completed, ?3)),
                    total = COALESCE(total, MAX(completed, ?3)), seconds = ?4 WHERE id = ?5
                """).execute(arguments: [result.file, result.path, result.bytes, seconds, id])
        case .removed(let id):
            try db.cachedStatement(sql: "DELETE FROM download WHERE id = ?").execute(arguments: [id])
        }
    }

    // MARK: reads

    /// Every download, oldest first.
    func all() throws(StoreError) -> [StoredDownload] {
        try read { db in try StoredDownload.fetchAll(db, sql: "SELECT * FROM download ORDER BY id") }
    }

    /// The downloads a stopped service left queued, connecting or downloading, oldest first: the ones the
    /// next service re-enqueues.
    func unfinished() throws(StoreError) -> [StoredDownload] {
        try read { db in
            try StoredDownload.fetchAll(db, sql: "SELECT * FROM download WHERE state IN (?, ?, ?) ORDER BY id",
                                        arguments: StatementArguments(DownloadState.unfinishedNames))
        }
    }

    func find(_ id: DownloadID) throws(StoreError) -> StoredDownload? {
        try read { db in try StoredDownload.fetchOne(db, key: id) }
    }

    func count() throws(StoreError) -> Int {
        try read { db in try StoredDownload.fetchCount(db) }
    }

    // MARK: transactions

    private func write<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        try storeOperation("cannot write the queue") { try pool.write(body) }
    }

    private func read<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        try storeOperation("cannot read the queue") { try pool.read(body) }
    }
}
