import GRDB
import Glibc

/// The checks made on `haul.sqlite` before the store opens it for writing. Opening with GRDB writes at
/// once (WAL mode, migrations), so a file that is not a readable haul database is found out first by a
/// read-only connection, and left exactly as it is.
enum StoreFile {
    /// The file's mode: the queue names what the user downloads and from where.
    static let mode: mode_t = 0o600

    /// Makes sure `path` is a regular file of this user's with mode 0600: an absent one is made a new,
    /// empty queue (`create`); a looser mode on an existing one, or its -wal and -shm, is tightened.
    static func prepare(_ path: String, in directory: String) throws(StoreError) {
        var info = stat()
        if lstat(path, &info) != 0 {
            let lookError = errno
            guard lookError == ENOENT else {
                throw StoreError(.file, "cannot open \(path): \(String(cString: strerror(lookError)))")
            }
            // A -wal without its database is a queue that lost its file, not a new one: SQLite would delete
            // the -wal beside the new, empty file.
            if let size = size(of: path + "-wal"), size > 0 {
                throw StoreError(.unreadable, "\(Store.fileName) is missing but \(Store.fileName)-wal holds \(size) bytes "
                    + "of a queue; put the file back, or move \(Store.fileName)-wal away to start a new queue")
            }
            try create(path, in: directory)
            return
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

    /// Makes a new queue at `path`: the schema is written to a file of its own (0600), which takes the name
    /// only once whole. So a `haul.sqlite` is always a database with haul's tables, never an empty file, and
    /// one found empty, cut short or without its tables is a damaged queue (refused), never a new one.
    private static func create(_ path: String, in directory: String) throws(StoreError) {
        var template = Array((path + ".new-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else {
            let openError = errno
            if openError == ENOENT { throw StoreError(.file, "cannot open the queue: no directory \(directory)") }
            throw StoreError(.file, "cannot create \(path): \(String(cString: strerror(openError)))")
        }
        let temporary = String(cString: template.withUnsafeBufferPointer { $0.baseAddress! })
        func discard() {
            for name in [temporary, temporary + "-journal", temporary + "-wal", temporary + "-shm"] { unlink(name) }
        }
        // Exactly 0600 whatever the umask (a umask of 0277 would leave the owner unable to write).
        let changed = fchmod(descriptor, mode)
        let changeError = errno
        close(descriptor)
        guard changed == 0 else {
            discard()
            throw StoreError(.file, "cannot make \(path) private (mode 0600): \(String(cString: strerror(changeError)))")
        }
        do {
            try storeOperation("cannot create the queue") {
                var configuration = Configuration()
                configuration.label = "haul.sqlite new"
                // A rollback journal while it is made (synchronous FULL: each commit is on disk), then WAL mode,
                // which the header keeps; the close leaves no -wal.
                let queue = try DatabaseQueue(path: temporary, configuration: configuration)
                try StoreSchema.migrator.migrate(queue)
                try queue.writeWithoutTransaction { db in
                    _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
                }
                try queue.close()
            }
        } catch {
            discard()
            throw error
        }
        let named = link(temporary, path)
        let linkError = errno
        discard()
        guard named == 0 else {
            throw StoreError(.file, "cannot create \(path): \(String(cString: strerror(linkError)))")
        }
        let directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryDescriptor >= 0 {
            fsync(directoryDescriptor)
            close(directoryDescriptor)
        }
    }

    /// The size of the file at `path` (not following a link), or nil when there is none.
    private static func size(of path: String) -> Int64? {
        var info = stat()
        return lstat(path, &info) == 0 ? Int64(info.st_size) : nil
    }

    /// Checks `haul.sqlite` and its `-wal` as bytes, before SQLite reads them: SQLite deletes a -wal that
    /// lies beside an empty database file, and takes a -wal whose header it cannot read for an empty one (and
    /// writes over it), so either would lose the queue without a word. Refused (`.unreadable`), read only:
    /// an empty or cut-short database file, and a -wal that is not a write-ahead log. The -shm is an index
    /// SQLite rebuilds: not checked.
    ///
    /// Called before any connection to the file is open in this process (closing a descriptor of the file
    /// would drop SQLite's locks on it).
    static func inspect(_ path: String) throws(StoreError) {
        let walPath = path + "-wal"
        let walSize = size(of: walPath) ?? 0
        let header = try bytes(of: path, count: 100)
        if header.count < 100 {
            let held = walSize > 0 ? "\(Store.fileName)-wal holds \(walSize) bytes of it" : nil
            throw StoreError.unreadable(header.isEmpty ? "it is empty (cut short\(held.map { "; " + $0 } ?? ""))"
                                        : "it is cut short at \(header.count) bytes\(held.map { " (" + $0 + ")" } ?? "")")
        }
        // Another format: SQLite names it (`file is not a database`).
        guard header.starts(with: Array("SQLite format 3\0".utf8)) else { return }
        if walSize > 0 {
            try checkWAL(walPath, size: walSize)
            // Pages may lie in the -wal: SQLite reads them there, and its quick_check finds any that are missing.
            return
        }
        // The page count in the header counts only when its "valid for" number matches the change counter.
        let pageSize = header.bigEndian(16, 2) == 1 ? 65536 : header.bigEndian(16, 2)
        let pages = header.bigEndian(28, 4)
        guard pages > 0, header.bigEndian(24, 4) == header.bigEndian(92, 4) else { return }
        let whole = Int64(pages) * Int64(pageSize)
        let actual = size(of: path) ?? 0
        if actual < whole {
            throw StoreError.unreadable("it is cut short (\(actual) of its \(whole) bytes)")
        }
    }

    /// Refuses a -wal whose 32-byte header is not a write-ahead log's: magic, format version, page size and
    /// the header's own checksum. Frames past a valid header are SQLite's to judge: it stops at the first one
    /// that does not check (what a crash mid-write leaves).
    private static func checkWAL(_ path: String, size: Int64) throws(StoreError) {
        let header = try bytes(of: path, count: 32)
        let magic = header.count == 32 ? header.bigEndian(0, 4) : 0
        let pageSize = header.count == 32 ? header.bigEndian(8, 4) : 0
        var problem: String?
        if header.count < 32 {
            problem = "it is cut short at \(header.count) bytes"
        } else if magic != 0x377f_0682 && magic != 0x377f_0683 {
            problem = "its first bytes are not a write-ahead log header"
        } else if header.bigEndian(4, 4) != 3_007_000 {
            problem = "its format is unknown"
        } else if pageSize < 512 || pageSize > 65536 || pageSize & (pageSize - 1) != 0 {
            problem = "its page size is damaged"
        } else if walChecksum(header[0..<24], bigEndian: magic & 1 == 1) != (header.bigEndian(24, 4), header.bigEndian(28, 4)) {
            problem = "its header is damaged"
        }
        if let problem {
            throw StoreError(.unreadable, "\(Store.fileName)-wal is not a readable write-ahead log: \(problem) "
                + "(it may hold the queue's latest changes); move \(Store.fileName) and \(Store.fileName)-wal away "
                + "to start a new queue")
        }
    }

    /// SQLite's WAL checksum over `bytes` (a multiple of 8), its words read in the byte order the magic names.
    private static func walChecksum(_ bytes: ArraySlice<UInt8>, bigEndian: Bool) -> (Int, Int) {
        var s1: UInt32 = 0
        var s2: UInt32 = 0
        let words = Array(bytes)
        func word(_ at: Int) -> UInt32 {
            let value = words[at ..< at + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            return bigEndian ? value : value.byteSwapped
        }
        for at in stride(from: 0, to: words.count, by: 8) {
            s1 = s1 &+ word(at) &+ s2
            s2 = s2 &+ word(at + 4) &+ s1
        }
        return (Int(s1), Int(s2))
    }

    /// Up to `count` bytes from the start of `path` (fewer when the file is shorter).
    private static func bytes(of path: String, count: Int) throws(StoreError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else {
            throw StoreError(.file, "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + filled, count - filled, off_t(filled)) }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { throw StoreError(.file, "cannot read \(path): \(String(cString: strerror(errno)))") }
            if got == 0 { break }
            filled += got
        }
        return Array(buffer.prefix(filled))
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
                // haul makes a queue whole (`create`): one without its tables lost them (a cut, a lost -wal).
                if !tables.contains("download") {
                    throw StoreError.unreadable("its tables are missing (cut short, or its -wal lost)")
                }
                if let problem = StoreSchema.newerSchemaProblem(applied: try StoreSchema.migrator.appliedIdentifiers(db)) {
                    throw problem
                }
            }
        }
    }
}

private extension Array where Element == UInt8 {
    /// The unsigned big-endian number of `count` bytes at `offset`.
    func bigEndian(_ offset: Int, _ count: Int) -> Int {
        self[offset ..< offset + count].reduce(0) { $0 << 8 | Int($1) }
    }
}
