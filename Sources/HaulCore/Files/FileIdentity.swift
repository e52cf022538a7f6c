import CLinux
import Glibc

/// A file's device and inode as text, `DEVICE:INODE`, and its birth time where the file system keeps one
/// (`DEVICE:INODE@SECONDS.NANOSECONDS`): what tells that a name still leads to the file a download wrote. A
/// rename keeps all three; a file made anew at the name has another inode, or, when the file system gave the
/// freed inode number back at once (ext4 and tmpfs do), another birth time.
package enum FileIdentity {
    static func text(device: dev_t, inode: ino_t, birth: Birth?) -> String {
        "\(device):\(inode)" + (birth.map { "@\($0.seconds).\($0.nanoseconds)" } ?? "")
    }

    /// A birth time (statx's btime).
    struct Birth: Sendable, Equatable {
        var seconds: Int64
        var nanoseconds: UInt32
    }

    /// The birth time of `name` in the directory `directory` (of `directory` itself when `name` is empty), not
    /// through a link; nil where the file system keeps none.
    static func birth(in directory: Int32, _ name: String) -> Birth? {
        var seconds: Int64 = 0
        var nanoseconds: UInt32 = 0
        guard haul_birth_time(directory, name, &seconds, &nanoseconds) == 0 else { return nil }
        return Birth(seconds: seconds, nanoseconds: nanoseconds)
    }

    /// The identity of the regular file at `path` (not through a link); nil when there is none.
    package static func of(_ path: String) -> String? {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return text(device: info.st_dev, inode: info.st_ino, birth: birth(in: AT_FDCWD, path))
    }

    /// Whether `current` (`of`, or made from an `fstatat`) is the file `recorded` names. A record made before
    /// birth times were kept has none: there, device and inode alone decide.
    package static func same(_ current: String?, as recorded: String) -> Bool {
        guard let current else { return false }
        if current == recorded { return true }
        guard !recorded.contains("@") else { return false }
        return current.split(separator: "@", maxSplits: 1).first.map(String.init) == recorded
    }

    /// Whether anything (a link, even a dangling one) is at `path`.
    package static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }
}
