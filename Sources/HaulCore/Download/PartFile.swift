import Foundation

/// An open data file that receives a download's bytes with positional writes.
///
/// Every failure is a `.fileIO` `HaulError` naming the path. `@unchecked Sendable`: the descriptor is
/// set in `init` and cleared only by `close()`, which the owner calls after all writers are done;
/// `pwrite` at distinct offsets from several tasks (segments) is safe.
public final class PartFile: @unchecked Sendable {
    public let path: String
    private var descriptor: Int32

    /// Opens (creating if needed) `path` for writing; `truncate` drops any previous content.
    public init(path: String, truncate: Bool) throws(HaulError) {
        self.path = path
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : 0)
        let fd = open(path, flags, 0o644)
        guard fd >= 0 else { throw PartFile.error("cannot create", path) }
        descriptor = fd
    }

    /// Opens or creates `path` and takes an exclusive `flock` on it, so no other download (in this process
    /// or another) writes the same part file; nil when another holds it. The lock ends with the process.
    public init?(claiming path: String) throws(HaulError) {
        self.path = path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw PartFile.error("cannot create", path) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            Glibc.close(fd)
            if code == EWOULDBLOCK { return nil }
            throw PartFile.error("cannot lock", path, code)
        }
        descriptor = fd
    }

    /// The file's current size.
    public func size() throws(HaulError) -> Int64 {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw PartFile.error("cannot stat", path) }
        return Int64(info.st_size)
    }

    /// Cuts the file to `length` bytes.
    public func truncate(to length: Int64) throws(HaulError) {
        guard ftruncate(descriptor, off_t(length)) == 0 else { throw PartFile.error("cannot truncate", path) }
    }

    deinit {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
    }

    /// Writes all of `bytes` at `offset`, retrying short writes and interruptions.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(HaulError) {
        var done = 0
        while done < bytes.count {
            let n = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw PartFile.error("cannot write", path)
            }
            done += n
        }
    }

    public func write(_ bytes: [UInt8], at offset: Int64) throws(HaulError) {
        var failure: HaulError?
        bytes.withUnsafeBytes { buffer in
            do { try write(buffer, at: offset) } catch { failure = HaulError.from(error) }
        }
        if let failure { throw failure }
    }

    /// Flushes the data to stable storage.
    public func sync() throws(HaulError) {
        guard fsync(descriptor) == 0 else { throw PartFile.error("cannot sync", path) }
    }

    /// Flushes the data (not all metadata) to stable storage: what a checkpoint needs.
    public func syncData() throws(HaulError) {
        guard fdatasync(descriptor) == 0 else { throw PartFile.error("cannot sync", path) }
    }

    public func close() throws(HaulError) {
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

    static func rename(_ from: String, _ to: String) throws(HaulError) {
        guard Glibc.rename(from, to) == 0 else { throw PartFile.error("cannot rename \(from) to", to) }
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
