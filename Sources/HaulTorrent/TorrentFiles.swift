import Glibc
import HaulCore

/// What a torrent download reads and writes itself; libtorrent writes the files' bytes.
package enum TorrentFiles {
    /// A .torrent file's bytes, at most `limit` (one byte more says it is larger). Errors as file I/O (exit 3).
    package static func read(_ path: String, limit: Int) throws(HaulError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw HaulError(.fileIO, "cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            throw HaulError(.fileIO, "cannot read \(path): it is a directory")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while bytes.count <= limit {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw HaulError(.fileIO, "cannot read \(path): \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            bytes += chunk[..<count]
        }
        return bytes
    }

    /// The file at `path` if there is one, nil when there is none or it cannot be read.
    static func readIfPresent(_ path: String, limit: Int) -> [UInt8]? {
        guard access(path, F_OK) == 0 else { return nil }
        return try? read(path, limit: limit)
    }

    /// Replaces `path` with `bytes` whole: written to a temporary name beside it, synced, renamed over it, so
    /// a crash leaves the old file or the new one, never half of one.
    static func replace(_ path: String, with bytes: [UInt8]) throws(HaulError) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { throw HaulError(.fileIO, "cannot write \(temporary): \(String(cString: strerror(errno)))") }
        do throws(SystemError) {
            try FileIO.writeAll(fd, bytes)
        } catch {
            close(fd)
            unlink(temporary)
            throw HaulError(.fileIO, "cannot write \(temporary): \(error)")
        }
        fsync(fd)
        close(fd)
        guard rename(temporary, path) == 0 else {
            let words = String(cString: strerror(errno))
            unlink(temporary)
            throw HaulError(.fileIO, "cannot write \(path): \(words)")
        }
    }

    /// The output directory, made with its parents when missing.
    static func makeDirectory(_ path: String) throws(HaulError) {
        // Each parent first: "a/b/c" makes "a", "a/b", then "a/b/c".
        let prefixes = path.indices.filter { path[$0] == "/" && $0 != path.startIndex }.map { String(path[..<$0]) }
        for made in prefixes + [path] where mkdir(made, 0o755) != 0 && errno != EEXIST {
            throw HaulError(.fileIO, "cannot create directory \(made): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw HaulError(.fileIO, "\(path) is not a directory")
        }
    }

    /// Whether `relative` (to `directory`) is on disk; with a trailing `/`, whether it is a directory there.
    static func exists(_ relative: String, in directory: String) -> Bool {
        var info = stat()
        let folder = relative.hasSuffix("/")
        let path = FilePath.join(directory, folder ? String(relative.dropLast()) : relative)
        guard lstat(path, &info) == 0 else { return false }
        return !folder || (info.st_mode & S_IFMT) == S_IFDIR
    }
}
