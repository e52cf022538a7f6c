import CLinux
import Foundation
import NIOConcurrencyHelpers

/// A server program a test starts (vsftpd for one connection, sshd): started with posix_spawn with none of
/// this process's descriptors but the ones given, and reaped by a thread of its own when it ends, so that
/// stopping it never waits on anything but the kernel.
public final class ServerProcess: Sendable {
    public let pid: pid_t
    private let ended = NIOLockedValueBox(Ending())

    private struct Ending {
        var status: Int32?
        var waiters: [CheckedContinuation<Int32, Never>] = []
    }

    /// Starts `argv`; `socket` (an inetd-style server's connection) becomes its standard input and output,
    /// `output` its standard output, `errors` its standard error (else /dev/null).
    public init(_ argv: [String], socket: Int32? = nil, output: Int32? = nil, errors: Int32? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let socket {
            posix_spawn_file_actions_adddup2(&actions, socket, 0)
            posix_spawn_file_actions_adddup2(&actions, socket, 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            if let output {
                posix_spawn_file_actions_adddup2(&actions, output, 1)
            } else {
                posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            }
        }
        if let errors {
            posix_spawn_file_actions_adddup2(&actions, errors, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        _ = haul_spawn_close_from(&actions, 3)
        let arguments = argv.map { strdup($0) } + [nil]
        defer { arguments.forEach { free($0) } }
        var child: pid_t = 0
        let result = posix_spawn(&child, arguments[0]!, &actions, nil, arguments, environ)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .ENOENT) }
        pid = child
        let (ended, started) = (self.ended, child)
        Thread.detachNewThread {
            var status: Int32 = 0
            while waitpid(started, &status, 0) < 0 && errno == EINTR {}
            let code = status & 0x7f == 0 ? (status >> 8) & 0xff : -1
            let waiters = ended.withLockedValue { ending in
                ending.status = code
                defer { ending.waiters = [] }
                return ending.waiters
            }
            for waiter in waiters { waiter.resume(returning: code) }
        }
    }

    public var isRunning: Bool { ended.withLockedValue { $0.status == nil } }

    /// Waits for it to end: its exit status, -1 when a signal ended it.
    public func exitStatus() async -> Int32 {
        await withCheckedContinuation { continuation in
            let status = ended.withLockedValue { ending -> Int32? in
                if ending.status == nil { ending.waiters.append(continuation) }
                return ending.status
            }
            if let status { continuation.resume(returning: status) }
        }
    }

    /// SIGTERM, unless it has ended.
    public func stop() {
        ended.withLockedValue { ending in
            if ending.status == nil { kill(pid, SIGTERM) }
        }
    }
}
