import Glibc
import NIOConcurrencyHelpers

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
}
