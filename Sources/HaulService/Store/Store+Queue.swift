import GRDB
import HaulCore

/// The waiting queue's order in the store: the `queueRank` column (schema v5), lowest first. Ranks are only
/// compared, never shown: a new download takes one past the highest, a download that stopped running one
/// below the lowest, and a move ranks the whole waiting queue again past the highest (10,000 waiting rows
/// are rewritten in one transaction in milliseconds; a move is a person's key).
extension Store {
    /// Where a download that comes into the waiting queue goes.
    enum QueueEnd: Sendable, Equatable {
        case first, last
    }

    static func rank(_ id: DownloadID, joining end: QueueEnd, in db: Database) throws {
        let sql = switch end {
        case .first: "UPDATE download SET queueRank = (SELECT coalesce(min(queueRank), 0) - 1 FROM download) WHERE id = ?"
        case .last: "UPDATE download SET queueRank = (SELECT coalesce(max(queueRank), 0) + 1 FROM download) WHERE id = ?"
        }
        try db.cachedStatement(sql: sql).execute(arguments: [id])
    }

    /// The ids of the waiting (queued and paused) downloads, the first to start first.
    static func waitingIDs(in db: Database) throws -> [DownloadID] {
        try DownloadID.fetchAll(db, sql: "SELECT id FROM download WHERE state IN (?, ?) ORDER BY queueRank, id",
                                arguments: [DownloadState.queued.storedName, DownloadState.paused.storedName])
    }

    /// Puts waiting download `id` at `position` of the waiting queue (clamped), as a `moved` event says.
    static func move(_ id: DownloadID, to position: Int, in db: Database) throws {
        var ids = try waitingIDs(in: db)
        guard let from = ids.firstIndex(of: id) else { return }
        ids.remove(at: from)
        ids.insert(id, at: Swift.min(Swift.max(0, position), ids.count))
        let base = try Int64.fetchOne(db, sql: "SELECT coalesce(max(queueRank), 0) + 1 FROM download") ?? 1
        let statement = try db.cachedStatement(sql: "UPDATE download SET queueRank = ? WHERE id = ?")
        for (offset, id) in ids.enumerated() {
            try statement.execute(arguments: [base + Int64(offset), id])
        }
    }

}
