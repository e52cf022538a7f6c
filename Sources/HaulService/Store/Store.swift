import Foundation
import GRDB
import HaulCore
import NIOConcurrencyHelpers

/// The queue and its history in `STATE/haul.sqlite` (mode 0600), written by the service alone from the
/// manager's events (through `StoreWriter`) and read for `ls` and on start.
///
/// A `DatabasePool` in WAL mode with GRDB's `synchronous = NORMAL`: every committed transaction survives
/// the process being killed (kill -9); a power cut may lose the last ones before a checkpoint. Readers never
/// wait for the writer. Every call is synchronous (blocking file I/O: call it off the cooperative pool) and
/// throws only `StoreError`, whose message is one line.
///
/// The -wal is copied into `haul.sqlite` (checkpointed) a minute after the last checkpoint at the latest while
/// writes come, and wholly on `close`, which leaves `haul.sqlite` alone: the file holds the queue, and a copy
/// of it is a backup.
///
/// A file this build must not write is refused, never deleted, replaced or migrated over: one that is not a
/// readable database, is cut short or lost its tables, or whose -wal is not a write-ahead log (`.unreadable`),
/// and one a newer haul migrated (`.newerSchema`).
///
/// A file that cannot be written (read-only, immutable) opens for reading: writes fail with `.readOnly`, and
/// the first write once it can be written again opens the file anew and goes through.
final class Store: Sendable {
    static let fileName = "haul.sqlite"

    /// The database file.
    let path: String
    /// How long writes may pile up in the -wal before a checkpoint copies them into the file.
    private let checkpointInterval: Duration
    /// What the checkpoint's interval is timed on: the service's clock (a test's manual one).
    private let clock: MomentClock
    private let connections: NIOLockedValueBox<Connections>

    private struct Connections {
        var pool: DatabasePool
        /// A write failed as read-only, or the file could not be written when it was opened: the next write
        /// opens the file again first, once it can be written.
        var readOnly: Bool
        var lastCheckpoint: Moment
    }

    /// The connections. Internal for tests, which use it to constrain the writer connection.
    var pool: DatabasePool { connections.withLockedValue { $0.pool } }

    /// Opens (creating if absent) `directory/haul.sqlite` and brings its schema up to this build's.
    /// The directory exists already (the service makes it, mode 0700).
    init(directory: String, checkpointInterval: Duration = .seconds(60), clock: MomentClock = .continuous)
        throws(StoreError)
    {
        path = directory.hasSuffix("/") ? directory + Self.fileName : directory + "/" + Self.fileName
        self.checkpointInterval = checkpointInterval
        self.clock = clock
        try StoreFile.prepare(path, in: directory)
        try StoreFile.inspect(path)
        try StoreFile.check(path)
        // A file that cannot be written opens for reading (GRDB would write to it to set up WAL mode), as it
        // is: a schema this build would update cannot be read as it is, and is refused meanwhile.
        let readOnly = !Self.canWrite(path)
        let pool = try Self.open(path, readOnly: readOnly)
        do throws(StoreError) {
            try storeOperation("cannot open the queue") {
                if !readOnly {
                    try StoreSchema.migrator.migrate(pool)
                } else if try !pool.read({ db in try StoreSchema.migrator.hasCompletedMigrations(db) }) {
                    throw StoreError.readOnly("cannot update the queue's schema")
                }
            }
        } catch {
            try? pool.close()
            throw error
        }
        connections = NIOLockedValueBox(Connections(pool: pool, readOnly: readOnly, lastCheckpoint: clock.now))
    }

    private static func open(_ path: String, readOnly: Bool = false) throws(StoreError) -> DatabasePool {
        var configuration = Configuration()
        configuration.readonly = readOnly
        configuration.label = fileName
        configuration.foreignKeysEnabled = true
        // Only the service writes; a wait would be another process reading (the sqlite3 shell).
        configuration.busyMode = .timeout(5)
        configuration.maximumReaderCount = 2
        return try storeOperation("cannot open the queue") {
            try DatabasePool(path: path, configuration: configuration)
        }
    }

    /// Whether this process may open `path` for writing (root passes a mode, not an immutable flag).
    private static func canWrite(_ path: String) -> Bool {
        faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) == 0
    }

    /// Why the queue cannot be written now, in one line, or nil.
    var writeProblem: String? {
        connections.withLockedValue { $0.readOnly } && !Self.canWrite(path)
            ? "\(Self.fileName) cannot be written (read-only): adds fail, and changes wait in memory until it can"
            : nil
    }

    /// Copies the -wal into the file (a checkpoint that waits for readers) and closes every connection,
    /// the readers first, so that SQLite removes the -wal and -shm as the last one closes. The store is
    /// unusable afterwards.
    func close() throws(StoreError) {
        let (pool, readOnly) = connections.withLockedValue { ($0.pool, $0.readOnly) }
        // Idle readers close now: the writer's close is then the last, which checkpoints again and removes
        // the -wal.
        pool.releaseMemory()
        var checkpointError: StoreError?
        if !readOnly {
            do {
                try storeOperation("cannot copy the queue's -wal into \(Self.fileName)") {
                    _ = try pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
                }
            } catch {
                // Made read-only while open: the -wal keeps the changes, and the next service reads them there.
                checkpointError = Self.canWrite(path) ? error : StoreError(.readOnly, "cannot copy the queue's -wal "
                    + "into \(Self.fileName): it cannot be written (read-only); \(Self.fileName)-wal keeps the changes")
            }
        }
        try storeOperation("cannot close the queue") { try pool.close() }
        if let checkpointError { throw checkpointError }
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
                INSERT INTO download (url, job, secretsWithheld, state, file, added, gid, queueRank)
                VALUES (?, ?, ?, ?, ?, ?, ?, (SELECT coalesce(max(queueRank), 0) + 1 FROM download))
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

    /// Stores `job` as the job of download `id` (without its secrets, as `insert` does): what a change made to a
    /// download that is not running (a new address from `haul refresh` or aria2's `changeUri`, options from
    /// `changeOption`) must keep across a restart of the service.
    func replaceJob(of id: DownloadID, with job: DownloadJob) throws(StoreError) {
        let withheld = WithheldJob(job)
        var encoder = WithheldJob.Encoder()
        let json = try encoder.encode(withheld)
        try write { db in
            try db.cachedStatement(sql: "UPDATE download SET url = ?, job = ?, secretsWithheld = ? WHERE id = ?")
                .execute(arguments: [withheld.job.url, json, withheld.secretsWithheld, id])
        }
    }

    /// Writes `events`, which happened at `time`, in one transaction: all of them or, on an error,
    /// none. Progress is written as it comes; `StoreWriter` is what keeps it to once a second.
    func apply(_ events: [ManagerEvent], at time: Date) throws(StoreError) {
        try apply([(events, time)])
    }

    /// Writes each run of events at its own time, all in one transaction (all or none): what a write that
    /// failed kept, with what came since.
    ///
    /// Each row the events change is read once, changed as `DownloadRecord.apply` says (the rules every face
    /// shares), and written once, whatever number of its events the transaction holds.
    func apply(_ batches: [(events: [ManagerEvent], time: Date)]) throws(StoreError) {
        guard batches.contains(where: { !$0.events.isEmpty }) else { return }
        try write { db in
            var rows = try Self.rows(changedBy: batches, in: db)
            var changed: [DownloadID] = []
            for (events, time) in batches {
                let milliseconds = time.unixMilliseconds
                for event in events {
                    switch event {
                    case .added:
                        // `insert` stored it, with the job the event does not carry.
                        continue
                    case .removed(let id):
                        rows[id] = nil
                        try db.cachedStatement(sql: "DELETE FROM download WHERE id = ?").execute(arguments: [id])
                        continue
                    case .fact(_, let fact):
                        // Told to the front ends, not kept; a retry's resume offset is (`DownloadRecord`), and so
                        // is what `rm --files` deleted.
                        switch fact {
                        case .retrying, .filesRemoved, .category: break
                        default: continue
                        }
                    case .sources:
                        // What each source brought in this run: the roster's, shown live, not kept. A download's
                        // sources themselves are its job's.
                        continue
                    case .moved(let id, let position):
                        // The queue's order is read from the rows' states: what came before is written first.
                        for id in changed { if let row = rows[id] { try row.write(in: db) } }
                        for id in changed {
                            rows[id]?.changed = false
                            rows[id]?.joinsQueue = nil
                        }
                        changed = []
                        try Self.move(id, to: position, in: db)
                        continue
                    case .state, .started, .progress, .finished:
                        break
                    }
                    let id = event.downloadID
                    guard var row = rows[id] else { continue }
                    if row.changed == false { changed.append(id) }
                    row.apply(event, at: milliseconds)
                    rows[id] = row
                }
            }
            for id in changed { if let row = rows[id] { try row.write(in: db) } }
        }
    }

    /// The rows `batches` change, by id, as they are before.
    private static func rows(changedBy batches: [(events: [ManagerEvent], time: Date)],
                             in db: Database) throws -> [DownloadID: ChangedRow] {
        var ids = Set<DownloadID>()
        for (events, _) in batches {
            for event in events {
                switch event {
                case .added, .removed: continue
                default: ids.insert(event.downloadID)
                }
            }
        }
        var rows: [DownloadID: ChangedRow] = [:]
        rows.reserveCapacity(ids.count)
        // In runs: SQLite takes at most 32766 arguments to a statement.
        let all = Array(ids)
        for start in stride(from: 0, to: all.count, by: 500) {
            let run = all[start..<Swift.min(start + 500, all.count)]
            let sql = "SELECT * FROM download WHERE id IN (" + Array(repeating: "?", count: run.count).joined(separator: ",") + ")"
            for stored in try StoredDownload.fetchAll(db, sql: sql, arguments: StatementArguments(Array(run))) {
                rows[stored.record.id] = ChangedRow(stored)
            }
        }
        return rows
    }

    /// One row as the events of a transaction change it.
    private struct ChangedRow {
        var record: DownloadRecord
        var started: Int64?
        var finished: Int64?
        var changed = false
        /// It came into the waiting queue: first (it stopped running) or last (added again by a retry).
        var joinsQueue: QueueEnd?

        init(_ stored: StoredDownload) {
            record = stored.record
            started = stored.started?.unixMilliseconds
            finished = stored.finished?.unixMilliseconds
        }

        /// `event`, which happened at `time` (Unix milliseconds): the record's rules, and the row's times (a run
        /// starts when it connects and ends when it is done, failed or cancelled).
        mutating func apply(_ event: ManagerEvent, at time: Int64) {
            changed = true
            // The store keeps no rate: the moment is never read.
            let before = record.state
            record.apply(event, at: .origin)
            if case .state(_, let state) = event {
                if state == .connecting { started = time }
                finished = state.endsRun ? time : nil
                if !QueueOrder.waits(state) {
                    joinsQueue = nil
                } else if !QueueOrder.waits(before) {
                    joinsQueue = before.isActive ? .first : .last
                }
            }
        }

        func write(in db: Database) throws {
            var category: String?
            var message: String?
            var reason: String?
            if let error = record.state.error {
                category = error.category.rawValue
                message = error.message
                reason = error.reason?.rawValue
            }
            try db.cachedStatement(sql: """
                UPDATE download SET state = ?, errorCategory = ?, errorMessage = ?, errorReason = ?, file = ?, path = ?,
                    part = ?, completed = ?, total = ?, started = ?, finished = ?, seconds = ?, removedFiles = ?,
                    removedBytes = ?, category = ?
                WHERE id = ?
                """).execute(arguments: [record.state.storedName, category, message, reason, record.name, record.path,
                                         record.part, record.completed, record.total, started, finished, record.seconds,
                                         record.filesRemoved?.files, record.filesRemoved?.bytes, record.category,
                                         record.id])
            if let joinsQueue { try Store.rank(record.id, joining: joinsQueue, in: db) }
        }
    }

    /// Forgets these downloads (files on disk are not the store's business); returns how many rows went.
    @discardableResult
    func remove(_ ids: [DownloadID]) throws(StoreError) -> Int {
        try write { db in try StoredDownload.deleteAll(db, keys: ids) }
    }

    // MARK: reads

    /// Every download, oldest first.
    func all() throws(StoreError) -> [StoredDownload] {
        try read { db in try StoredDownload.fetchAll(db, sql: "SELECT * FROM download ORDER BY id") }
    }

    /// The downloads a stopped service left queued, connecting, downloading or waiting for room, oldest first:
    /// the ones the next service re-enqueues.
    func unfinished() throws(StoreError) -> [StoredDownload] {
        try read { db in
            try StoredDownload.fetchAll(db, sql: "SELECT * FROM download WHERE state IN (?, ?, ?, ?) ORDER BY queueRank, id",
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

    /// A write transaction. One that fails as read-only is tried once more, on connections opened anew,
    /// when the file can be written again; while it cannot, each write fails with `.readOnly` at once.
    func write<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        var pool = try writablePool()
        do throws(StoreError) {
            return try commit(body, on: pool)
        } catch where error.kind == .readOnly {
            connections.withLockedValue { $0.readOnly = true }
            pool = try writablePool()
            do throws(StoreError) {
                return try commit(body, on: pool)
            } catch where error.kind == .readOnly {
                connections.withLockedValue { $0.readOnly = true }
                throw error
            }
        }
    }

    private func commit<T>(_ body: (Database) throws -> T, on pool: DatabasePool) throws(StoreError) -> T {
        let value = try storeOperation("cannot write the queue") { try pool.write(body) }
        let due = connections.withLockedValue { connections in
            connections.readOnly = false
            let now = clock.now
            guard connections.lastCheckpoint.duration(to: now) >= checkpointInterval else { return false }
            connections.lastCheckpoint = now
            return true
        }
        // After this write, on the writer's queue: the caller does not wait for it. A reader on an old
        // snapshot only stops it short (the rest goes next time); a failure leaves the -wal as it was.
        if due { pool.asyncWriteWithoutTransaction { db in _ = try? db.checkpoint(.passive) } }
        return value
    }

    /// The pool to write with: the one open, or, after a read-only failure, a new one once the file can
    /// be written (the old one closes).
    private func writablePool() throws(StoreError) -> DatabasePool {
        let (current, readOnly) = connections.withLockedValue { ($0.pool, $0.readOnly) }
        guard readOnly else { return current }
        guard Self.canWrite(path) else { throw StoreError.readOnly("cannot write the queue") }
        // Never a new file in place of one that went: SQLite would make an empty queue there.
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw StoreError(.file, "cannot write the queue: \(path) is gone")
        }
        let reopened = try Self.open(path)
        let replaced = connections.withLockedValue { connections -> DatabasePool? in
            // Another write may have reopened it meanwhile: that one stays.
            guard connections.pool === current else { return nil }
            connections.pool = reopened
            connections.readOnly = false
            return current
        }
        guard let replaced else {
            try? reopened.close()
            return pool
        }
        try? replaced.close()
        return reopened
    }

    private func read<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        try storeOperation("cannot read the queue") { try pool.read(body) }
    }
}
