import Foundation
import GRDB
import HaulCore

/// One row of the `download` table: a download the user added and what became of it.
@dynamicMemberLookup
struct StoredDownload: Sendable, Equatable, FetchableRecord, TableRecord {
    static let databaseTableName = "download"

    /// What the row holds of the download as every face knows it (reached through as the row's own fields:
    /// `stored.state`): its id (the user's, never reused), URL (its password masked), state (from the `state`,
    /// `errorCategory`, `errorMessage` and `errorReason` columns), file name (as planned until the server
    /// answered; then as claimed), path, part (`DEVICE:INODE` of its `.part` file, `FileIdentity`), completed
    /// and total bytes, and the seconds its finished run took.
    var record: DownloadRecord
    /// The `job` column: the job's JSON with secrets removed. Decoded on demand by `job`, so that listing
    /// thousands of rows does not decode thousands of jobs.
    var jobJSON: String
    /// The job had a password or credential headers that were not stored (see `WithheldJob`).
    var secretsWithheld: Bool
    var added: Date
    /// When the latest run began connecting.
    var started: Date?
    /// When the latest run ended (done, failed, cancelled); nil while queued, running or paused.
    var finished: Date?
    /// Its aria2 GID: 16 lower-case hex digits, unique, for the JSON-RPC face.
    var gid: String
    /// Its place in the waiting queue, the first to start lowest (`Store+Queue.swift`).
    var queueRank: Int64

    /// The file's name (the `file` column).
    var file: String {
        get { record.name }
        set { record.name = newValue }
    }

    subscript<T>(dynamicMember path: WritableKeyPath<DownloadRecord, T>) -> T {
        get { record[keyPath: path] }
        set { record[keyPath: path] = newValue }
    }

    /// The job to run again, without the secrets that were withheld.
    var job: DownloadJob {
        get throws(StoreError) { try WithheldJob.decoded(jobJSON) }
    }

    enum Columns {
        static let id = Column("id")
        static let url = Column("url")
        static let job = Column("job")
        static let secretsWithheld = Column("secretsWithheld")
        static let state = Column("state")
        static let errorCategory = Column("errorCategory")
        static let errorMessage = Column("errorMessage")
        static let errorReason = Column("errorReason")
        static let file = Column("file")
        static let path = Column("path")
        static let part = Column("part")
        static let completed = Column("completed")
        static let total = Column("total")
        static let added = Column("added")
        static let started = Column("started")
        static let finished = Column("finished")
        static let seconds = Column("seconds")
        static let gid = Column("gid")
        static let removedFiles = Column("removedFiles")
        static let removedBytes = Column("removedBytes")
        static let category = Column("category")

        static let queueRank = Column("queueRank")
    }

    init(row: Row) throws {
        typealias C = Columns
        let id: DownloadID = try row.decode(forColumn: C.id)
        let stateName: String = try row.decode(forColumn: C.state)
        guard let state = DownloadState(storedName: stateName,
                                        errorCategory: try row.decode(forColumn: C.errorCategory),
                                        errorMessage: try row.decode(forColumn: C.errorMessage),
                                        errorReason: try row.decode(forColumn: C.errorReason))
        else {
            throw StoreError.unreadable("download \(id) has the unknown state \(stateName)")
        }
        record = DownloadRecord(id: id, url: try row.decode(forColumn: C.url), name: try row.decode(forColumn: C.file),
                                state: state)
        record.path = try row.decode(forColumn: C.path)
        record.part = try row.decode(forColumn: C.part)
        record.completed = try row.decode(forColumn: C.completed)
        record.total = try row.decode(forColumn: C.total)
        record.seconds = try row.decode(forColumn: C.seconds)
        if let files: Int = try row.decode(forColumn: C.removedFiles) {
            record.filesRemoved = RemovedFiles(files: files, bytes: try row.decode(Int64?.self, forColumn: C.removedBytes) ?? 0)
        }
        record.category = try row.decode(forColumn: C.category)
        jobJSON = try row.decode(forColumn: C.job)
        secretsWithheld = try row.decode(forColumn: C.secretsWithheld)
        added = Date(unixMilliseconds: try row.decode(forColumn: C.added))
        started = try row.decode(Int64?.self, forColumn: C.started).map(Date.init(unixMilliseconds:))
        finished = try row.decode(Int64?.self, forColumn: C.finished).map(Date.init(unixMilliseconds:))
        gid = try row.decode(forColumn: C.gid)
        queueRank = try row.decode(Int64?.self, forColumn: C.queueRank) ?? Int64(id)
    }
}

/// The store keeps times as Unix milliseconds (INTEGER): exact, compact, sortable.
extension Date {
    init(unixMilliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(unixMilliseconds) / 1000)
    }

    var unixMilliseconds: Int64 {
        Int64((timeIntervalSince1970 * 1000).rounded())
    }
}
