import CLinux
import Foundation
import NIOConcurrencyHelpers

/// The real `haul` binary, started with posix_spawn so a test can signal it and read its peak memory.
public final class HaulProcess: Sendable {
    public struct Exit: Sendable, CustomStringConvertible {
        public var status: Int32
        /// Set when a signal ended the process.
        public var signal: Int32?
        /// Peak resident set size of haul alone, in KiB, when started with `measuringMemory`.
        public var maxRSSKiB: Int?
        public var stdout: String
        public var stderr: String

        public var stdoutLines: [String] { stdout.split(separator: "\n").map(String.init) }

        /// For a failed expectation's message: how it ended and what it said.
        public var description: String {
            "exit \(status)" + (signal.map { ", signal \($0)" } ?? "") + "; stderr: \(stderr.debugDescription); stdout: "
                + String(stdout.prefix(2000)).debugDescription
        }
    }

    public let pid: pid_t
    private let stdoutPath: String
    private let stderrPath: String
    private let stdoutRead: Int32
    private let rssPath: String?
    /// The file standing in for stdin, when one was given.
    private let stdinPath: String?
    private let lines: AsyncStream<String>

    /// The binary next to the test bundle (same build folder, whatever the scratch path).
    public static let binary: String = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var folder = URL(fileURLWithPath: exe).deletingLastPathComponent()
        while !FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("haul").path),
            folder.path != "/"
        {
            folder = folder.deletingLastPathComponent()
        }
        return folder.appendingPathComponent("haul").path
    }()

    /// Starts `haul ARGS` in `directory`. Its stdout is teed: kept for `wait()` and streamed as lines.
    /// With `measuringMemory`, GNU time starts haul and records its peak RSS. (A child spawned from this big
    /// test process inherits the parent's memory high-water mark across exec, so wait4's ru_maxrss would
    /// measure the test, not haul; time's own small process forks haul afresh.)
    /// `wrapper` runs haul under another program (`strace -o FILE`, say), which must exec it. `binary` is
    /// another copy of haul to run instead of the build's.
    public init(_ arguments: [String], in directory: String, stdin: String? = nil, measuringMemory: Bool = false,
                environment extra: [String: String] = [:], wrapper: [String] = [],
                binary: String = HaulProcess.binary) throws {
        let scratch = NSTemporaryDirectory() + "haul-e2e-\(UUID().uuidString)"
        stdoutPath = scratch + ".out"
        stderrPath = scratch + ".err"
        rssPath = measuringMemory ? scratch + ".rss" : nil
        stdinPath = stdin == nil ? nil : scratch + ".in"
        var pipe: [Int32] = [0, 0]
        guard Glibc.pipe(&pipe) == 0 else { throw POSIXError(.EMFILE) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdin {
            _ = FileManager.default.createFile(atPath: scratch + ".in", contents: Data(stdin.utf8))
            posix_spawn_file_actions_addopen(&actions, 0, scratch + ".in", O_RDONLY, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addclose(&actions, pipe[0])
        // Nothing else of this process's: the descriptors other tests have open right now (their pipes and
        // sockets, many not close-on-exec) would otherwise count against haul's open-files limit.
        _ = haul_spawn_close_from(&actions, 3)
        // coreutils' env changes directory and execs haul, so the pid is haul's own.
        let launcher = (rssPath.map { ["/usr/bin/time", "-f", "%M", "-o", $0] } ?? []) + wrapper
        let argv = (launcher + ["/usr/bin/env", "-C", directory, binary] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var environment = ProcessInfo.processInfo.environment
        environment["TERM"] = "dumb"
        // The user's own config file stays out of the tests; a test that wants one sets XDG_CONFIG_HOME.
        environment["XDG_CONFIG_HOME"] = "/nonexistent/haul-tests"
        environment.merge(extra) { $1 }
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var child: pid_t = 0
        let result = posix_spawn(&child, argv[0]!, &actions, nil, argv, envp)
        close(pipe[1])
        guard result == 0 else {
            close(pipe[0])
            throw POSIXError(POSIXErrorCode(rawValue: result) ?? .ENOENT)
        }
        pid = child
        stdoutRead = pipe[0]
        let (stream, continuation) = AsyncStream<String>.makeStream()
        lines = stream
        let readFD = pipe[0]
        let copyPath = stdoutPath
        // A reader thread, so a blocking read never holds a task thread.
        Thread.detachNewThread {
            let copy = fopen(copyPath, "w")
            var pending = [UInt8]()
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(readFD, $0.baseAddress!, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                fwrite(buffer, 1, n, copy)
                pending += buffer[..<n]
                while let newline = pending.firstIndex(of: 10) {
                    continuation.yield(String(decoding: pending[..<newline], as: UTF8.self))
                    pending.removeSubrange(...newline)
                }
            }
            fclose(copy)
            close(readFD)
            continuation.finish()
        }
    }

    /// Runs `haul ARGS` to the end.
    public static func run(_ arguments: [String], in directory: String, stdin: String? = nil,
                           environment: [String: String] = [:],
                           measuringMemory: Bool = false, wrapper: [String] = [],
                           binary: String = HaulProcess.binary, limit: Duration? = nil) async throws -> Exit {
        try await HaulProcess(arguments, in: directory, stdin: stdin, measuringMemory: measuringMemory,
                              environment: environment, wrapper: wrapper, binary: binary).wait(limit: limit)
    }

    /// `haul-server`, beside the build's `haul`.
    public static var server: String {
        URL(fileURLWithPath: binary).deletingLastPathComponent().appendingPathComponent("haul-server").path
    }

    /// Waits for the first stdout line that satisfies `condition`, and returns it.
    public func firstLine(where condition: @escaping @Sendable (String) -> Bool) async -> String? {
        for await line in lines where condition(line) { return line }
        return nil
    }

    /// A task that kills the process (SIGKILL) once `limit` (scaled by `TestEnvironment.bound`) has passed,
    /// unless cancelled first: a wait on its output can then not last for ever.
    public func killed(after limit: Duration) -> Task<Void, Never> {
        let pid = self.pid
        return Task {
            if (try? await Task.sleep(for: TestEnvironment.bound(limit))) != nil { kill(pid, SIGKILL) }
        }
    }

    public func send(_ signal: Int32) {
        kill(pid, signal)
    }

    /// Waits for the process to end (on a thread of its own: wait4 blocks). With a `limit` (scaled by
    /// `TestEnvironment.bound`), a process still running then is killed (SIGKILL; `Exit.signal` 9), so a hang
    /// fails its test instead of holding the whole run.
    public func wait(limit: Duration? = nil) async -> Exit {
        let pid = self.pid
        let watchdog = limit.map(killed(after:))
        let status = await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            Thread.detachNewThread {
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                continuation.resume(returning: status)
            }
        }
        watchdog?.cancel()
        let rss = rssPath.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }
            .flatMap { $0.split(separator: "\n").last.flatMap { Int($0) } }
        if let rssPath { try? FileManager.default.removeItem(atPath: rssPath) }
        // The reader thread finishes when the pipe closes; drain the stream so the copy is complete.
        for await _ in lines {}
        let termination = status & 0x7f
        let out = (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: stdoutPath)
        try? FileManager.default.removeItem(atPath: stderrPath)
        if let stdinPath { try? FileManager.default.removeItem(atPath: stdinPath) }
        return Exit(status: termination == 0 ? (status >> 8) & 0xff : -1,
                    signal: termination == 0 ? nil : termination,
                    maxRSSKiB: rss, stdout: out, stderr: err)
    }
}
