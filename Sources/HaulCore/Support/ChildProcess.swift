import FoundationEssentials
import Glibc

/// A helper program haul starts and does not wait for in the caller (a hook, `xdg-open`): stdin is
/// /dev/null, stdout goes where `output` says, and a thread of its own reaps it and reports how it ended.
package enum ChildProcess {
    package enum Output: Sendable {
        /// To haul's stderr: never into haul's stdout (`--json` lines).
        case stderr
        /// Nowhere, stderr too (nothing lands on the full screen).
        case discard
    }

    /// Starts `argv` (a bare program name is looked up in PATH, as a shell would) with `environment` added
    /// to haul's; `ownProcessGroup` keeps a terminal's Ctrl-C meant for haul from it. `ended` gets the
    /// exit status (128 + the signal when one ended it). Returns 0, or the errno of a child that could not
    /// start (`ended` is then not called).
    package static func start(_ argv: [String], environment: [String: String] = [:], output: Output,
                              ownProcessGroup: Bool = false,
                              ended: @escaping @Sendable (Int32) -> Void = { _ in }) -> Int32 {
        guard let program = argv.first else { return ENOENT }
        var variables = ProcessInfo.processInfo.environment
        variables.merge(environment) { $1 }
        let cArguments = argv.map { strdup($0) } + [nil]
        let cEnvironment = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            cArguments.forEach { free($0) }
            cEnvironment.forEach { free($0) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        switch output {
        case .stderr:
            posix_spawn_file_actions_adddup2(&actions, 2, 1)
        case .discard:
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var flags = resetSignals(&attributes)
        if ownProcessGroup {
            posix_spawnattr_setpgroup(&attributes, 0)
            flags |= Int16(POSIX_SPAWN_SETPGROUP)
        }
        posix_spawnattr_setflags(&attributes, flags)
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, program, &actions, &attributes, cArguments, cEnvironment)
        guard result == 0 else { return result }
        let child = pid
        detachEssentialThread {
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
            ended((status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f))
        }
        return 0
    }

    /// The signals haul ignores or takes through a stream (which ignores them too): a program it starts gets
    /// their default actions back, and no blocked signals, whatever thread starts it. Sets both in
    /// `attributes` and returns the flags that make them count, for the caller to add its own to.
    package static func resetSignals(_ attributes: inout posix_spawnattr_t) -> Int16 {
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD, SIGXFSZ] { sigaddset(&defaults, number) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &empty)
        return Int16(POSIX_SPAWN_SETSIGDEF) | Int16(POSIX_SPAWN_SETSIGMASK)
    }
}
