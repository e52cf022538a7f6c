import CLinux
import FoundationEssentials
import Glibc
import HaulCore

/// Starts `haul service run` (in `haul-server`) detached from the client: a session of its own, stdin from /dev/null, stdout
/// and stderr appended to `service.log`. The service writes one byte to descriptor 3 once its socket
/// accepts connections; the launcher waits for that byte, or for the pipe to close (the service ended:
/// another one won the lock, or it failed and said why in the log).
package enum ServiceLauncher {
    /// How long a start may take before the client gives up.
    static let readyTimeout: Int32 = 15_000

    /// True when the service it started listens; false when another service holds the lock (it answers
    /// once it listens). Throws the reason the service gave when it could not start.
    static func start(_ directory: StateDirectory, arguments: [String]) async throws(HaulError) -> Bool {
        try directory.prepare()
        // The log is opened for the service without following a link (as every file of the state directory):
        // one planted there would have the service append to whatever it points at.
        var logInfo = stat()
        if lstat(directory.log, &logInfo) == 0, (logInfo.st_mode & S_IFMT) != S_IFREG {
            throw HaulError(.fileIO, "\(directory.log) is not a regular file (a link is never written through); "
                            + "move it away to start the service")
        }
        let executable = try ServerExecutable.path()
        var pipeEnds: [Int32] = [-1, -1]
        guard haul_pipe_cloexec(&pipeEnds) == 0 else { throw StateDirectory.error("cannot make a pipe for", directory.path) }
        let (readEnd, writeEnd) = (pipeEnds[0], pipeEnds[1])
        defer { close(readEnd) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, directory.log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // dup2 clears close-on-exec on the copy: the service gets the pipe as 3, and nothing else of ours.
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 3)
        haul_spawn_close_from(&actions, 4)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, ChildProcess.resetSignals(&attributes) | Int16(haul_posix_spawn_setsid()))

        let argv = [executable, "service", "run", "--ready-fd", "3"] + arguments
        var cArguments = argv.map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        var environment = ProcessInfo.processInfo.environment
        environment["HAUL_HOME"] = directory.path
        var cEnvironment = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in cEnvironment { free(pointer) } }

        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, &cArguments, &cEnvironment)
        close(writeEnd)
        guard spawned == 0 else {
            throw HaulError(.other, "cannot start the service (\(executable)): \(String(cString: strerror(spawned)))")
        }
        let answer = await Self.readAnswer(readEnd)
        if answer == "1" { return true }
        // The service lives on in its own session; a start that ended early is reaped here.
        var status: Int32 = 0
        _ = waitpid(pid, &status, WNOHANG)
        if answer == Self.anotherRuns { return false }
        if answer.hasPrefix("!") {
            throw HaulError(.other, "the service could not start: \(answer.dropFirst())")
        }
        throw HaulError(.other, "the service could not start; see \(directory.log)")
    }

    /// The service's answer when another service holds the state directory's lock: the start lost a race,
    /// and the winner answers once it listens.
    package static let anotherRuns = "0"

    /// What the service wrote before closing the pipe: "1" once it listens, `anotherRuns` when another service
    /// has the directory, "!" and a reason when it could not start; "" when it ended without a word or the
    /// wait timed out. Blocking: on the I/O
    /// executor, not the cooperative pool.
    private static func readAnswer(_ fd: Int32) async -> String {
        await withTaskExecutorPreference(IOExecutor.shared) {
            var answer: [UInt8] = []
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while answer.count < 4096 {
                let n = IOExecutor.blocking { poll(&descriptor, 1, readyTimeout) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { break }
                var chunk = [UInt8](repeating: 0, count: 4096)
                let got = (try? FileIO.read(fd, into: &chunk)) ?? 0
                guard got > 0 else { break }
                answer += chunk[..<got]
                if answer == [0x31] { break }
            }
            return String(decoding: answer, as: UTF8.self)
        }
    }
}

extension ServiceLauncher {
    /// Returns once no service holds the state directory's lock (the service lets go of it last, as it ends).
    static func waitUntilStopped(_ directory: StateDirectory) async throws(HaulError) {
        let fd = open(directory.lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return }  // no lock file: no service ever ran here
        defer { close(fd) }
        // Blocking until the service's exclusive lock is gone: on the I/O executor.
        let locked = await withTaskExecutorPreference(IOExecutor.shared) { () -> Bool in
            while IOExecutor.blocking({ flock(fd, LOCK_SH) }) != 0 { if errno != EINTR { return false } }
            return true
        }
        if !locked { throw StateDirectory.error("cannot wait for the lock", directory.lock) }
        flock(fd, LOCK_UN)
    }
}
