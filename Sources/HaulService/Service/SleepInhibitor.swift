import Foundation
import Glibc
import HaulCore
import NIOConcurrencyHelpers

/// Keeps the machine from sleeping while downloads run: held when the first starts, released when none runs.
protocol SleepInhibitor: Sendable {
    /// Takes the lock (a second call while held does nothing).
    func hold()
    /// Lets it go (nothing when not held).
    func release()
}

/// logind's inhibitor lock, through `systemd-inhibit --what=sleep --mode=block`: a child that holds the lock
/// for as long as it runs. Its program is `cat` reading a pipe whose other end only this process holds, so the
/// lock goes when `release` closes that end, and also when the service dies however it dies (kill -9 closes
/// the pipe too): no lock outlives haul. Where there is no logind (no systemd booted, no `systemd-inhibit`),
/// it is silently absent; a `systemd-inhibit` that finds no bus exits at once, holding nothing.
final class LogindInhibitor: SleepInhibitor {
    private let held = NIOLockedValueBox<Int32?>(nil)
    private let program: String
    private let available: Bool

    /// - Parameter program: `systemd-inhibit`, found in PATH.
    /// - Parameter booted: whether the system runs systemd (`sd_booted`'s test: /run/systemd/system is there).
    init(program: String = "systemd-inhibit", booted: Bool = LogindInhibitor.systemdBooted) {
        self.program = program
        available = booted
    }

    static var systemdBooted: Bool {
        var info = stat()
        return stat("/run/systemd/system", &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// The command line: the lock is on sleep only (not shutdown or idle: a screen may still blank).
    var argv: [String] {
        [program, "--what=sleep", "--mode=block", "--who=haul", "--why=Downloads are running", "cat"]
    }

    func hold() {
        guard available else { return }
        held.withLockedValue { writer in
            guard writer == nil else { return }
            writer = Self.start(argv)
        }
    }

    func release() {
        held.withLockedValue { writer in
            if let fd = writer { close(fd) }
            writer = nil
        }
    }

    deinit {
        release()
    }

    /// Starts `argv` with its stdin the read end of a new pipe, its output discarded; returns the write end
    /// (close-on-exec, so no other child inherits it), or nil when it could not start.
    private static func start(_ argv: [String]) -> Int32? {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        // Close-on-exec at once: no other program haul starts may hold the writing end (the lock would then
        // outlive `release`).
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, ends[0], 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, ChildProcess.resetSignals(&attributes))
        let cArguments = argv.map { strdup($0) } + [nil]
        let cEnvironment = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            cArguments.forEach { free($0) }
            cEnvironment.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, argv[0], &actions, &attributes, cArguments, cEnvironment)
        close(ends[0])
        guard result == 0 else {
            close(ends[1])
            return nil
        }
        let child = pid
        detachEssentialThread {
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        }
        return ends[1]
    }
}
