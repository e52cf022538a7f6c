import CLinux
import Glibc
import HaulCore

/// Where one user's service keeps its queue (`haul.sqlite`), its control socket (`haul.sock`), its log
/// (`service.log`) and the lock that lets one service at a time own them (`service.lock`).
///
/// `$HAUL_HOME` if set, else `$XDG_STATE_HOME/haul`, else `~/.local/state/haul`. The directory is the
/// first line of defence: mode 0700, owned by the user, so no other user reaches the socket or the files.
package struct StateDirectory: Sendable, Equatable {
    package let path: String

    package init(path: String) {
        self.path = path.utf8.count > 1 && FilePath.hasSuffix(path, "/") ? String(path[..<path.utf8.index(before: path.endIndex)]) : path
    }

    var database: String { path + "/haul.sqlite" }
    package var socket: String { path + "/haul.sock" }
    var log: String { path + "/service.log" }
    var lock: String { path + "/service.lock" }
    /// The aria2 JSON-RPC face's secret, made on first use unless `--rpc-secret-file` names another.
    package var rpcSecret: String { path + "/rpc-secret" }

    /// Whether nothing is at the socket's path (not even a link): then no service runs here, since one
    /// listening has its socket there and removes it when it ends (a killed one leaves it).
    var socketIsMissing: Bool {
        var info = stat()
        return lstat(socket, &info) != 0 && errno == ENOENT
    }

    /// What is at the socket's path when it is not a socket (nil when nothing is there, or a socket is): a
    /// file or a link planted there is never connected through, bound over or removed.
    package var socketObstruction: String? {
        var info = stat()
        guard lstat(socket, &info) == 0 else { return nil }
        switch info.st_mode & S_IFMT {
        case S_IFSOCK: return nil
        case S_IFLNK: return "a symbolic link"
        case S_IFREG: return "a regular file"
        case S_IFDIR: return "a directory"
        default: return "something other than a socket"
        }
    }

    /// The one line that says what is in the way at the socket's path.
    package func socketObstructed(by what: String) -> HaulError {
        HaulError(.other, "\(socket) is \(what), not the service's socket: haul neither connects through it nor "
                  + "removes it; move it away")
    }

    /// The socket at the socket's path, by its device and inode; nil when no socket is there.
    package var socketIdentity: FileIdentity? {
        var info = stat()
        guard lstat(socket, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { return nil }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// A file by its device and inode: the socket a service bound, told apart from one bound after it.
    package struct FileIdentity: Sendable, Equatable {
        let device: UInt64
        let inode: UInt64
    }

    /// The state directory the environment names.
    package static func resolve(_ environment: [String: String]) -> StateDirectory {
        if let home = environment["HAUL_HOME"], !home.isEmpty { return StateDirectory(path: home) }
        if let state = environment["XDG_STATE_HOME"], FilePath.hasPrefix(state, "/") { return StateDirectory(path: state + "/haul") }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "/"
        return StateDirectory(path: home + "/.local/state/haul")
    }

    /// What a service says (in its log) when another already holds this directory's lock: the one failure a
    /// starting client waits through (the launcher knows it by the service's answer, `ServiceLauncher.anotherRuns`).
    package var alreadyRunning: HaulError { HaulError(.other, "another service already runs on \(path)") }

    /// sun_path holds 108 bytes with its terminating NUL.
    static let longestSocketPath = 107

    /// Creates the directory (and its parents) with mode 0700, or checks the one that is there: a
    /// directory, not a link, owned by this user; its mode is set to 0700.
    package func prepare() throws(HaulError) {
        guard socket.utf8.count <= Self.longestSocketPath else {
            throw HaulError(.usage, "the state directory \(path) is too long for a Unix socket path "
                            + "(\(Self.longestSocketPath - "/haul.sock".utf8.count) bytes at most); set HAUL_HOME to a shorter one")
        }
        try Self.makeDirectories(path)
        var info = stat()
        guard lstat(path, &info) == 0 else { throw Self.error("cannot inspect", path) }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw HaulError(.fileIO, "the state directory \(path) is not a directory (a link or a file is there)")
        }
        guard info.st_uid == geteuid() else {
            throw HaulError(.fileIO, "the state directory \(path) belongs to another user; not using it")
        }
        if info.st_mode & 0o777 != 0o700, chmod(path, 0o700) != 0 { throw Self.error("cannot set mode 0700 on", path) }
    }

    /// `mkdir -p`, each new directory 0700.
    private static func makeDirectories(_ path: String) throws(HaulError) {
        var prefix = FilePath.hasPrefix(path, "/") ? "" : "."
        for component in FilePath.components(of: path) {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST { throw error("cannot create", prefix) }
        }
    }

    static func error(_ what: String, _ path: String, _ code: Int32 = errno) -> HaulError {
        HaulError(.fileIO, "\(what) \(path): \(String(cString: strerror(code)).lowercased())")
    }
}

/// The lock that makes one service the owner of a state directory: an exclusive `flock` on
/// `service.lock`, held for the service's life and released by the kernel when it ends, however it ends
/// (`kill -9` included), so a dead service never blocks the next one.
package final class ServiceLock: Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// nil when another service holds it. `preparing`: the directory is made (or checked) first.
    package static func take(_ directory: StateDirectory, preparing: Bool = false) throws(HaulError) -> ServiceLock? {
        // No umask change: the downloaded files get the user's usual modes. The service's own files are made
        // 0600 explicitly, and the directory holding them is 0700.
        if preparing { try directory.prepare() }
        let fd = open(directory.lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw StateDirectory.error("cannot open", directory.lock) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK { return nil }
            throw StateDirectory.error("cannot lock", directory.lock, code)
        }
        return ServiceLock(descriptor: fd)
    }

    deinit {
        close(descriptor)
    }
}
