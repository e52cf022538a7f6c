import CLinux
import Foundation
import NIOConcurrencyHelpers

/// An open data file that receives a download's bytes with positional writes.
///
/// Large batches go to disk with direct I/O (`O_DIRECT`, on a second descriptor): the whole pages in the
/// middle of a batch are written from the transfer's buffer straight to the device, and only the partial
/// pages at its ends pass through the page cache. A download of gigabytes then neither fills the page
/// cache (which on a VM is slow to take from the host) nor leaves gigabytes to flush at the final fsync,
/// and it costs a fraction of the CPU. Where the file system refuses direct I/O, every write is buffered.
///
/// Every failure is a `.fileIO` `HaulError` naming the path. `@unchecked Sendable`: the descriptor is
/// set in `init` and cleared only by `close()`, which the owner calls after all writers are done;
/// `pwrite` at distinct offsets from several tasks (segments) is safe.
package final class PartFile: @unchecked Sendable {
    package let path: String
    private var descriptor: Int32
    /// The direct-I/O descriptor, opened on the first large write.
    private let direct = NIOLockedValueBox((io: DirectIO.untried, bytes: Int64(0)))

    /// Bytes that went to disk with direct I/O (the rest went through the page cache).
    package var directBytes: Int64 { direct.withLockedValue { $0.bytes } }

    enum DirectIO {
        case untried
        case open(Int32)
        /// Opened, but writes failed with `EINVAL`; closed with the file.
        case refused(Int32)
        case unavailable
    }

    /// The smallest run of whole pages written directly: one page. (Small files too: their pages then
    /// never enter the page cache, and their fsync has only metadata left to do.)
    static let directMinimum = IOBuffer.alignment
    /// Set `HAUL_BUFFERED_IO=1` to write through the page cache only (to compare, or for a file system
    /// whose direct I/O is slow).
    static let directAllowed = getenv("HAUL_BUFFERED_IO").map { String(cString: $0) != "1" } ?? true

    /// Opens (creating if needed) `path` for writing; `truncate` drops any previous content. A symbolic
    /// link at `path` is refused, not followed.
    package init(path: String, truncate: Bool) throws(HaulError) {
        self.path = path
        let flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (truncate ? O_TRUNC : 0)
        let fd = open(path, flags, 0o644)
        guard fd >= 0 else { throw PartFile.error("cannot create", path) }
        descriptor = fd
    }

    /// Takes over an open descriptor (readable and writable, from `OutputDirectory`); `path` names it in
    /// messages only: the file is never opened by its name again.
    init(descriptor: Int32, path: String) {
        self.path = path
        self.descriptor = descriptor
    }

    /// The file's current size.
    package func size() throws(HaulError) -> Int64 {
        Int64(try status().st_size)
    }

    /// `fstat` of the open file.
    func status() throws(HaulError) -> stat {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw PartFile.error("cannot stat", path) }
        return info
    }

    /// Runs `body` with the open descriptor (to read the file back: a checksum, a preview), never by name.
    func withDescriptor<T>(_ body: (Int32) throws(HaulError) -> T) throws(HaulError) -> T {
        try body(descriptor)
    }

    /// Cuts the file to `length` bytes.
    package func truncate(to length: Int64) throws(HaulError) {
        guard ftruncate(descriptor, off_t(length)) == 0 else { throw PartFile.error("cannot truncate", path) }
    }

    deinit {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
        stopDirectIO()
    }

    /// Writes all of `bytes` at `offset`: the whole pages in the middle with direct I/O when the batch is
    /// large and its memory lines up with the file's pages (transfer buffers do), the rest buffered.
    package func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(HaulError) {
        let align = Int64(IOBuffer.alignment)
        let head = (align - offset % align) % align
        let bodyEnd = (offset + Int64(bytes.count)) / align * align
        let bodyStart = offset + head
        guard Self.directAllowed, bodyEnd - bodyStart >= Self.directMinimum, let base = bytes.baseAddress,
            UInt(bitPattern: base + Int(head)) % UInt(align) == 0, let fd = directDescriptor()
        else {
            return try writeAll(descriptor, bytes, at: offset)
        }
        let split = { (from: Int64, to: Int64) in
            UnsafeRawBufferPointer(rebasing: bytes[Int(from - offset)..<Int(to - offset)])
        }
        try writeAll(descriptor, split(offset, bodyStart), at: offset)
        let failure = Self.pwriteAll(fd, split(bodyStart, bodyEnd), at: bodyStart)
        if failure == EINVAL {
            // The file system takes O_DIRECT at open but not for writes: buffered from now on. The
            // descriptor stays open until `close`, since another segment may be writing with it now.
            direct.withLockedValue { if case .open(let fd) = $0.io { $0.io = .refused(fd) } }
            try writeAll(descriptor, split(bodyStart, bodyEnd), at: bodyStart)
        } else if failure != 0 {
            throw PartFile.error("cannot write", path, failure)
        } else {
            direct.withLockedValue { $0.bytes += bodyEnd - bodyStart }
        }
        try writeAll(descriptor, split(bodyEnd, offset + Int64(bytes.count)), at: bodyEnd)
    }

    /// Closes the direct-I/O descriptor, if any (when no writer can be using it); later writes are buffered.
    private func stopDirectIO() {
        let fd = direct.withLockedValue { state -> Int32? in
            defer { state.io = .unavailable }
            switch state.io {
            case .open(let fd), .refused(let fd): return fd
            case .untried, .unavailable: return nil
            }
        }
        if let fd { _ = Glibc.close(fd) }
    }

    private func directDescriptor() -> Int32? {
        direct.withLockedValue { state in
            switch state.io {
            case .open(let fd): return fd
            case .refused, .unavailable: return nil
            case .untried:
                let fd = reopenDirect()
                state.io = fd.map { .open($0) } ?? .unavailable
                return fd
            }
        }
    }

    /// A second descriptor of the same file with `O_DIRECT`, reopened through `/proc/self/fd` (never by
    /// name: the name could point elsewhere by now), checked to be the same inode.
    private func reopenDirect() -> Int32? {
        let fd = open("/proc/self/fd/\(descriptor)", O_WRONLY | haul_o_direct() | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var mine = stat()
        var reopened = stat()
        guard fstat(descriptor, &mine) == 0, fstat(fd, &reopened) == 0,
            mine.st_dev == reopened.st_dev, mine.st_ino == reopened.st_ino
        else {
            _ = Glibc.close(fd)
            return nil
        }
        return fd
    }

    private func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(HaulError) {
        let failure = Self.pwriteAll(fd, bytes, at: offset)
        if failure != 0 { throw PartFile.error("cannot write", path, failure) }
    }

    /// `pwrite` until all is written, retrying short writes and interruptions; 0 or the `errno`.
    private static func pwriteAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Int32 {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            done += n
        }
        return 0
    }

    package func write(_ bytes: some ByteChunk, at offset: Int64) throws(HaulError) {
        var failure: HaulError?
        bytes.withUnsafeBytes { buffer in
            do { try write(buffer, at: offset) } catch { failure = HaulError.from(error) }
        }
        if let failure { throw failure }
    }

    /// Flushes the data to stable storage.
    package func sync() throws(HaulError) {
        guard fsync(descriptor) == 0 else { throw PartFile.error("cannot sync", path) }
    }

    /// Flushes the data (not all metadata) to stable storage: what a checkpoint needs.
    package func syncData() throws(HaulError) {
        guard fdatasync(descriptor) == 0 else { throw PartFile.error("cannot sync", path) }
    }

    package func close() throws(HaulError) {
        stopDirectIO()
        guard descriptor >= 0 else { return }
        let result = Glibc.close(descriptor)
        descriptor = -1
        guard result == 0 else { throw PartFile.error("cannot close", path) }
    }

    static func error(_ what: String, _ path: String, _ code: Int32 = errno) -> HaulError {
        HaulError(.fileIO, "\(what) \(path): \(String(cString: strerror(code)))")
    }
}

/// File-system steps of finishing a download, each mapped to a `.fileIO` error.
enum FileSystem {
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Creates `path` and its parents; fails with a clear message when it exists as a file or cannot be made.
    static func makeDirectory(_ path: String) throws(HaulError) {
        var info = stat()
        if stat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw HaulError(.fileIO, "output directory \(path) is not a directory")
            }
            guard access(path, W_OK | X_OK) == 0 else { throw PartFile.error("cannot write to", path) }
            return
        }
        let parent = FilePath.parent(of: path)
        if parent != path, !exists(parent) { try makeDirectory(parent) }
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else { throw PartFile.error("cannot create directory", path) }
    }

    /// Taken around the creates and renames of finishing downloads. The kernel locks a directory for each;
    /// eight threads doing it at once spin on that lock (`rwsem_spin_on_owner` was 11% of the CPU of 1000
    /// small downloads, on the core the curl thread needs), where this lock lets them sleep.
    static let namespaceLock = NIOLock()

    static func rename(_ from: String, _ to: String) throws(HaulError) {
        guard namespaceLock.withLock({ Glibc.rename(from, to) }) == 0 else { throw PartFile.error("cannot rename \(from) to", to) }
    }

    /// Makes a rename in `directory` durable.
    static func syncDirectory(_ directory: String) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        Glibc.close(fd)
    }

    static func remove(_ path: String) {
        unlink(path)
    }
}

/// Makes renames durable with as few directory fsyncs as possible (group commit): a caller whose rename
/// happened before a running fsync of the directory began shares it; one that came later waits for the
/// next, which then covers everyone who arrived meanwhile. Eight downloads finishing together in one
/// directory cost one or two fsyncs, not eight. Blocks the calling thread (downloads run on the
/// `IOExecutor`, not the cooperative pool).
final class DirectorySync: @unchecked Sendable {
    static let shared = DirectorySync()

    private struct Directory {
        /// Sync requests so far, and how many of them a finished fsync covers.
        var requested: UInt64 = 0
        var covered: UInt64 = 0
        var syncing = false
    }

    // Guarded by `mutex`. One entry per output directory, kept for the life of the process.
    private var directories: [String: Directory] = [:]
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let done = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let syncing: @Sendable (String) -> Void
    /// Called (under the lock) when a caller starts waiting for another's fsync: for tests.
    private let didWait: (@Sendable () -> Void)?

    init(syncing: @escaping @Sendable (String) -> Void = FileSystem.syncDirectory,
         didWait: (@Sendable () -> Void)? = nil) {
        self.syncing = syncing
        self.didWait = didWait
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(done, nil)
    }

    deinit {
        pthread_cond_destroy(done)
        pthread_mutex_destroy(mutex)
        done.deallocate()
        mutex.deallocate()
    }

    /// Returns once an fsync of `directory` that began after this call has finished.
    func sync(_ directory: String) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        directories[directory, default: Directory()].requested += 1
        let ticket = directories[directory, default: Directory()].requested
        while directories[directory, default: Directory()].covered < ticket {
            if directories[directory, default: Directory()].syncing {
                didWait?()
                pthread_cond_wait(done, mutex)
                continue
            }
            directories[directory, default: Directory()].syncing = true
            let covering = directories[directory, default: Directory()].requested
            pthread_mutex_unlock(mutex)
            syncing(directory)
            pthread_mutex_lock(mutex)
            directories[directory, default: Directory()].syncing = false
            directories[directory, default: Directory()].covered = covering
            pthread_cond_broadcast(done)
        }
    }
}
