import Foundation
import Glibc

/// `o` and `O`: hands a file or a folder to the desktop's opener (`xdg-open`), detached from the screen:
/// its stdin, stdout and stderr are /dev/null, so nothing it prints lands on the full screen, and it is
/// reaped on a thread of its own.
enum Opener {
    /// nil when started; else the line to show.
    static func open(_ path: String) -> String? {
        let arguments = ["xdg-open", path]
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own process group: a terminal signal (Ctrl-C) meant for haul is not its.
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, "xdg-open", &actions, &attributes, argv, environ)
        guard result == 0 else {
            return result == ENOENT ? "Cannot open: xdg-open is not installed (xdg-utils)"
                : "Cannot open: \(String(cString: strerror(result)))"
        }
        let child = pid
        Thread.detachNewThread {
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        }
        return nil
    }
}
