import GRDB
import Glibc

/// The checks made on `haul.sqlite` before the store opens it for writing. Opening with GRDB writes at
/// once (WAL mode, migrations), so a file that is not a readable haul database is found out first by a
/// read-only connection, and left exactly as it is.
enum StoreFile {
    /// The file's mode: the queue names what the user downloads and from where.
    static let mode: mode_t = 0o600

    /// Makes sure `path` is a regular file of this user's with mode 0600: an absent one is created empty
    /// (SQLite makes an empty file a new database, and its -wal and -shm take the file's mode); a looser
    /// mode on an existing one, or its -wal and -shm, is tightened.
    static func prepare(_ path: String, in directory: String) throws(StoreError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
        if descriptor >= 0 {
            // Exactly 0600 whatever the umask (a umask of 0277 would leave the owner unable to write).
            let changed = fchmod(descriptor, mode)
            let changeError = errno
            close(descriptor)
            guard changed == 0 else {
                throw StoreError(.file, "cannot make \(path) private (mode 0600): \(String(cString: strerror(changeError)))")
            }
            return
        }
        let openError = errno
        guard openError == EEXIST else {
            if openError == ENOENT {
                throw StoreError(.file, "cannot open the queue: no directory \(directory)")
            }
            throw StoreError(.file, "cannot create \(path): \(String(cString: strerror(openError)))")
        }
        for file in [path, path + "-wal", path + "-shm"] {
            var info = stat()
            guard lstat(file, &info) == 0 else { continue }
            guard info.st_mode & S_IFMT == S_IFREG else {
                throw StoreError(.file, "\(file) is not a regular file; move it away to start a new queue")
            }
            guard info.st_uid == getuid() else {
                throw StoreError(.file, "\(file) belongs to another user (uid \(info.st_uid)); not touching it")
            }
            if info.st_mode & 0o077 != 0, chmod(file, mode) != 0 {
                throw StoreError(.file, "cannot make \(file) private (mode 0600): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Throws `.unreadable` when the file is not a database SQLite reads without error, or is another
    /// program's database; `.newerSchema` when a newer haul migrated it. Writes nothing to the file.
    static func check(_ path: String) throws(StoreError) {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "haul.sqlite check"
        try storeOperation("cannot open the queue") {
            // GRDB reads `sqlite_master` on opening: random bytes fail here with SQLITE_NOTADB.
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            defer { try? queue.close() }
            try queue.read { db in
                // A truncated or damaged file can open and still lack pages: quick_check reads every one.
                let problems = try String.fetchAll(db, sql: "PRAGMA quick_check")
                guard problems == ["ok"] else {
                    throw StoreError.unreadable(problems.first ?? "quick_check found a problem")
                }
                let tables = try String.fetchSet(db, sql: """
                    SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
                    """)
                if !tables.isEmpty, !tables.contains("grdb_migrations") {
                    throw StoreError.unreadable("it holds tables but no haul schema (not haul's)")
                }
                if let problem = StoreSchema.newerSchemaProblem(applied: try StoreSchema.migrator.appliedIdentifiers(db)) {
                    throw problem
                }
            }
        }
    }
}
