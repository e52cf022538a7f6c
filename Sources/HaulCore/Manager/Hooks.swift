import Foundation
import Glibc
import NIOConcurrencyHelpers

/// A command run when a download ends (`--on-complete`, `--on-error`).
///
/// Without a shell: the command is split into words the way a shell would split a simple command (blanks
/// separate words; '...' and "..." quote; a backslash escapes the next character), and nothing else a shell
/// does happens, so a file name in the environment can never become code. `shell` runs it with `/bin/sh -c`.
package struct Hook: Sendable, Equatable, Codable {
    package var command: String
    package var shell: Bool

    package init(command: String, shell: Bool = false) {
        self.command = command
        self.shell = shell
    }

    /// The program and its arguments; nil when the quoting does not close or there is no word.
    package var argv: [String]? {
        if shell { return ["/bin/sh", "-c", command] }
        guard let words = Self.words(command), !words.isEmpty else { return nil }
        return words
    }

    /// Splits `text` into words as described above; nil on an unclosed quote or a trailing backslash.
    package static func words(_ text: String) -> [String]? {
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for character in text {
            if escaped {
                current.append(character)
                escaped = false
                continue
            }
            if let open = quote {
                if character == open {
                    quote = nil
                } else if character == "\\" && open == "\"" {
                    escaped = true
                } else {
                    current.append(character)
                }
                continue
            }
            switch character {
            case " ", "\t", "\n":
                if inWord { words.append(current) }
                current = ""
                inWord = false
            case "'", "\"":
                quote = character
                inWord = true
            case "\\":
                escaped = true
                inWord = true
            default:
                current.append(character)
                inWord = true
            }
        }
        guard quote == nil, !escaped else { return nil }
        if inWord { words.append(current) }
        return words
    }
}

/// Starts hooks without waiting for them in the download's slot, reaps them on a thread of their own each,
/// and lets a run wait for the ones still going before it exits.
final class HookRunner: Sendable {
    private let state = NIOLockedValueBox(State())

    private struct State {
        var running = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// Starts `hook` with `environment` added to haul's own. Its stdout goes to haul's stderr (so it never
    /// mixes into `--json` lines), its stdin is /dev/null. A hook that cannot start is one line on stderr.
    func run(_ hook: Hook, name: String, environment: [String: String]) {
        guard let argv = hook.argv else {
            TextOutput.standard.err("haul: \(name) '\(hook.command)': an unclosed quote, or no command")
            return
        }
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
        posix_spawn_file_actions_adddup2(&actions, 2, 1)
        var pid: pid_t = 0
        // posix_spawnp: a bare program name is looked up in PATH, as a shell would.
        let result = posix_spawnp(&pid, argv[0], &actions, nil, cArguments, cEnvironment)
        guard result == 0 else {
            TextOutput.standard.err("haul: \(name): cannot run '\(argv[0])': \(String(cString: strerror(result)))")
            return
        }
        state.withLockedValue { $0.running += 1 }
        let child = pid
        Thread.detachNewThread { [state] in
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
            let exit = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
            if exit != 0 {
                TextOutput.standard.err("haul: \(name) '\(argv[0])' exited with status \(exit)")
            }
            let waiters = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
                state.running -= 1
                guard state.running == 0 else { return [] }
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Returns once every hook started so far has ended.
    func waitForAll() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLockedValue { state -> Bool in
                if state.running == 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}
