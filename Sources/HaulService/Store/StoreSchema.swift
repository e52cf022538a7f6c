import GRDB

/// The versions of `haul.sqlite`'s schema, as GRDB migrations named "v1", "v2", ... in order.
///
/// A shipped migration never changes: each is frozen SQL rather than GRDB's schema builder, so a newer GRDB
/// cannot alter what an old one created. A change is a new migration appended here.
enum StoreSchema {
    static let migrator: DatabaseMigrator = {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            // One row per download the user added, until `haul rm`. AUTOINCREMENT: an id is never handed out
            // again, even after its row is deleted, so an id a user saw always means the same download.
            //
            // Times (`added`, `started`, `finished`) are Unix time in whole milliseconds (INTEGER, UTC).
            // `job` is the DownloadJob as JSON with its secrets removed (see `WithheldJob`); `url` is the
            // URL with its password masked. `errorCategory` and `errorMessage` are set only when failed.
            // No index on `state`: `unfinished()` runs once per service start and scans 10,000 rows in ms.
            try db.execute(sql: """
                CREATE TABLE download (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    url TEXT NOT NULL,
                    job TEXT NOT NULL,
                    secretsWithheld BOOLEAN NOT NULL,
                    state TEXT NOT NULL CHECK (state IN
                        ('queued', 'connecting', 'downloading', 'paused', 'done', 'failed', 'cancelled')),
                    errorCategory TEXT,
                    errorMessage TEXT,
                    file TEXT NOT NULL,
                    path TEXT,
                    completed INTEGER NOT NULL DEFAULT 0,
                    total INTEGER,
                    added INTEGER NOT NULL,
                    started INTEGER,
                    finished INTEGER,
                    seconds REAL
                )
                """)
        }
        migrator.registerMigration("v2") { db in
            // The aria2 JSON-RPC face names each download by a GID (16 lower-case hex digits), kept here so
            // that it survives a restart. Rows stored before get a random one.
            try db.execute(sql: """
                ALTER TABLE download ADD COLUMN gid TEXT;
                UPDATE download SET gid = lower(hex(randomblob(8))) WHERE gid IS NULL;
                CREATE UNIQUE INDEX download_gid ON download(gid);
                """)
        }
        migrator.registerMigration("v3") { db in
            // `part`: DEVICE:INODE of the download's `.part` file once it has one. A rename keeps them, so a
            // service killed between a download's rename and its "done" finds, when it starts again, that the
            // file at `path` is that very file: done, not fetched again under the next free name.
            try db.execute(sql: "ALTER TABLE download ADD COLUMN part TEXT")
        }
        migrator.registerMigration("v4") { db in
            // `errorReason`: a failure's typed reason (`FailureReason.rawValue`: "http-404", "disk-full"), set
            // with `errorCategory` when one is known. Rows failed before have none: their reason is unknown.
            try db.execute(sql: "ALTER TABLE download ADD COLUMN errorReason TEXT")
        }
        migrator.registerMigration("v5") { db in
            // `removedFiles`, `removedBytes`: what `rm --files` deleted for the download (its history row says
            // "removed with files"); NULL for the others.
            try db.execute(sql: "ALTER TABLE download ADD COLUMN removedFiles INTEGER; ALTER TABLE download ADD COLUMN removedBytes INTEGER")
        }
        migrator.registerMigration("v6") { db in
            // `queueRank`: the order of the waiting queue (queued and paused downloads, the first to start
            // lowest), as `haul move` and aria2's `changePosition` arrange it; a new download takes the highest
            // rank, one that stopped running the lowest. Rows stored before wait in the order of their ids.
            try db.execute(sql: """
                ALTER TABLE download ADD COLUMN queueRank INTEGER;
                UPDATE download SET queueRank = id;
                CREATE INDEX download_queueRank ON download(queueRank);
                """)
        }
        migrator.registerMigration("v7") { db in
            // Categories: `category`, the `[categories.NAME]` of the config file that placed the download's file
            // (its folder is in `path`); NULL for none, and for rows stored before.
            try db.execute(sql: "ALTER TABLE download ADD COLUMN category TEXT")
        }
        return migrator
    }()

    /// The migrations this build knows, oldest first.
    static var versions: [String] { migrator.migrations }

    /// Why a database whose applied migrations are `applied` must not be opened by this build, or nil.
    static func newerSchemaProblem(applied: Set<String>) -> StoreError? {
        let unknown = applied.subtracting(versions)
        guard !unknown.isEmpty else { return nil }
        // "v3" sorts after "v2" and "v10" after "v9"; an identifier of another form is shown as it is.
        let newest = unknown.max { (versionNumber($0) ?? -1, $0) < (versionNumber($1) ?? -1, $1) }!
        let known = versions.last ?? "none"
        return StoreError(.newerSchema, "\(Store.fileName) was written by a newer haul (schema \(newest); "
            + "this haul knows \(known)); not touching it")
    }

    private static func versionNumber(_ identifier: String) -> Int? {
        guard identifier.first == "v" else { return nil }
        return Int(identifier.dropFirst())
    }
}
