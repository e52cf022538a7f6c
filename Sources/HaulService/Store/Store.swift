import GRDB

/// The queue and its history in `STATE/haul.sqlite` (mode 0600), written by the service alone from the
/// manager's events and read for `ls` and on start.
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
}
