import FoundationEssentials
import Glibc
import NIOConcurrencyHelpers

/// `--refresh-with CMD`: runs the command that finds a download a new address, and reads that address from the
/// first line of its standard output.
///
/// As the other hooks, without a shell unless `--hook-shell` (the command split into words by `Hook`); the
/// placeholders `{url}`, `{origin}` and `{referer}` are replaced inside each word after the split, so an address
/// never becomes more words or code (under `--hook-shell` they are put in single quotes). Its stdin is /dev/null
/// and its stderr haul's; its stdout is read up to `outputLimit` bytes. It runs at most `timeout` (on the
/// download's clock) in a process group of its own, which is killed whole past that (a script's `curl` too).
enum RefreshCommand {
    static let timeout: Duration = .seconds(60)
    /// The most of its output read: an address is one line; past this the rest is not read.
    static let outputLimit = 64 << 10

    /// Why a command gave no address: a phrase that follows "--refresh-with did not help: ".
    struct Failure: Error, Equatable {
        let why: String
    }

    /// The words to run for `hook`, with the placeholders replaced; nil when the quoting does not close.
    static func argv(_ hook: Hook, placeholders: [String: String]) -> [String]? {
        guard let words = hook.argv else { return nil }
        let shell = words.count == 3 && words[0] == "/bin/sh" && words[1] == "-c" && hook.command == words[2]
        func fill(_ word: String, quoting: Bool) -> String {
            var filled = word
            for (name, value) in placeholders.sorted(by: { $0.key < $1.key }) {
                let put = quoting ? "'" + value.replacing("'", with: "'\\''") + "'" : value
                filled = filled.replacing("{\(name)}", with: put)
            }
            return filled
        }
        if shell { return ["/bin/sh", "-c", fill(words[2], quoting: true)] }
        return words.map { fill($0, quoting: false) }
    }

    /// Runs `argv` with `environment` added to haul's; the first line of its output, trimmed, or why there is none.
    static func run(_ argv: [String], environment: [String: String], clock: any Clock<Duration>)
        async -> Result<String, Failure>
    {
        let name = argv.first ?? ""
        let started: Started
        switch start(argv, environment: environment) {
        case .success(let child): started = child
        case .failure(let failure): return .failure(failure)
        }
        let fired = NIOLockedValueBox(false)
        let killer = Task {
            try? await clock.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            fired.withLockedValue { $0 = true }
            kill(-started.pid, SIGKILL)
        }
        let (output, status) = await read(started)
        killer.cancel()
        if fired.withLockedValue({ $0 }) {
            return .failure(Failure(why: "'\(name)' did not finish in \(timeout.components.seconds) s"))
        }
        guard status == 0 else { return .failure(Failure(why: "'\(name)' exited with status \(status)")) }
        let text = String(decoding: output, as: UTF8.self)
        let line = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let address = String(line.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
        guard !address.isEmpty else { return .failure(Failure(why: "'\(name)' printed no address")) }
        return .success(address)
    }

    private struct Started: Sendable {
        let pid: pid_t
        let output: Int32
    }

    /// Starts the command in a process group of its own, its stdout into a pipe whose reading end is returned.
    private static func start(_ argv: [String], environment: [String: String]) -> Result<Started, Failure> {
        guard let program = argv.first else { return .failure(Failure(why: "no command")) }
        var ends: [Int32] = [0, 0]
        // Close-on-exec at once, so that no other program haul starts meanwhile holds the writing end (which
        // would keep the reader from its end of file).
        guard pipe(&ends) == 0 else {
            return .failure(Failure(why: "cannot make a pipe: \(String(cString: strerror(errno)))"))
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
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
        posix_spawn_file_actions_adddup2(&actions, ends[1], 1)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, ChildProcess.resetSignals(&attributes) | Int16(POSIX_SPAWN_SETPGROUP))
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, program, &actions, &attributes, cArguments, cEnvironment)
        close(ends[1])
        guard result == 0 else {
            close(ends[0])
            return .failure(Failure(why: "cannot run '\(program)': \(String(cString: strerror(result)))"))
        }
        return .success(Started(pid: pid, output: ends[0]))
    }

    /// Reads the child's output (up to `outputLimit`) to its end on a thread of its own, then reaps it: the
    /// output and the exit status (128 + the signal when one ended it).
    private static func read(_ child: Started) async -> ([UInt8], Int32) {
        await withCheckedContinuation { continuation in
            let failed = detachThread {
                var output: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while let n = try? FileIO.read(child.output, into: &buffer), n > 0 {
                    output += buffer.prefix(Swift.min(n, outputLimit - output.count))
                    // Past the limit the rest is drained, not kept, so the command never blocks on a full pipe.
                }
                close(child.output)
                var status: Int32 = 0
                while waitpid(child.pid, &status, 0) < 0 && errno == EINTR {}
                continuation.resume(returning: (output, (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)))
            }
            if let failed {
                kill(-child.pid, SIGKILL)
                close(child.output)
                var status: Int32 = 0
                while waitpid(child.pid, &status, 0) < 0 && errno == EINTR {}
                TextOutput.standard.err("haul: --refresh-with: cannot start a thread: \(failed)")
                continuation.resume(returning: ([], 128 + SIGKILL))
            }
        }
    }
}
