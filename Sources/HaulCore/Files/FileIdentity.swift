import Glibc

/// A file's device and inode as text, `DEVICE:INODE`: what tells that a name still leads to the file a
/// download wrote (a rename keeps both; a file made anew at the name has another inode).
package enum FileIdentity {
    static func text(device: dev_t, inode: ino_t) -> String { "\(device):\(inode)" }

    /// The identity of the regular file at `path` (not through a link); nil when there is none.
    package static func of(_ path: String) -> String? {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return text(device: info.st_dev, inode: info.st_ino)
    }

    /// Whether anything (a link, even a dangling one) is at `path`.
    package static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }
}
