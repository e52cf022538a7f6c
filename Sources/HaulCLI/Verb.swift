import ArgumentParser
import HaulCore

/// The words a command line may start with that are verbs, not URLs: the one list of them, and what each is.
/// `Entry.main` dispatches on it; any other command line is a download's (`HaulCommand`).
enum Verb: String, CaseIterable {
    /// Run here, without curl: `VerifyCommand`, `ViewCommand`, and `haul help [VERB...]`.
    case verify, view, help
    /// The queue's verbs, clients of the per-user service (`SessionCommands`), in the order the help lists them.
    case add, ls, pause, resume, cancel, retry, refresh, rm, move, attach, service

    /// The verb `arguments` start with; nil for a download's command line.
    init?(_ arguments: [String]) {
        guard let first = arguments.first, let verb = Verb(rawValue: first) else { return nil }
        self = verb
    }

    /// Whether the command may need curl (a download, the screen, a service client): not `verify`, `view`,
    /// `help`, nor a command line that asks for the help or the version (`-h`, `--help`, `--version` before
    /// any `--`), which print and exit. Those load libcurl only if they come to use it; loaded in the
    /// background they waited for the load at exit (`haul --version`: 9.6 ms against 5.1).
    static func mayUseCurl(_ arguments: [String]) -> Bool {
        if let verb = Verb(arguments), !verb.isSession { return false }
        let options = arguments.prefix { $0 != "--" }
        return !options.contains { ["-h", "--help", "--version"].contains($0) }
    }

    /// A verb of the queue, whose help `SessionCommands` gives. `attach` is one, but runs as `haul` alone does:
    /// the full-screen interface on the queue.
    var isSession: Bool {
        switch self {
        case .verify, .view, .help: false
        case .add, .ls, .pause, .resume, .cancel, .retry, .refresh, .rm, .move, .attach, .service: true
        }
    }

    /// The queue's verbs as the download help names them: "add|ls|pause|resume|cancel|retry|refresh|rm|move|attach".
    static var queueWords: String {
        allCases.filter { $0.isSession && $0 != .service }.map(\.rawValue).joined(separator: "|")
    }

    /// Whether `arguments` (after the config file's selection) start the service: `service start|run`, which
    /// `haul-server` runs, and which take the service's keys of the config file.
    static func startsService(_ arguments: [String]) -> Bool {
        arguments.count >= 2 && arguments[0] == Verb.service.rawValue && ["start", "run"].contains(arguments[1])
    }
}

extension ParsableCommand {
    /// Parses the arguments of a verb (`haul verify ...`, `haul view ...`): the command, or the exit code after
    /// `--help` (0, printed) or a usage error (2, one line on stderr).
    static func parseVerb(_ verb: String, _ arguments: [String]) -> Result<Self, VerbExit> {
        do {
            return .success(try parse(arguments))
        } catch {
            return .failure(VerbExit(code: CommandLineExit.code(for: error, parsing: Self.self, prefix: "haul: \(verb): ")))
        }
    }
}

/// How a verb's command line ended before it ran.
struct VerbExit: Error {
    let code: Int32
}

/// The one way a command line ends before it runs, whoever parsed it (`haul`, `haul add`, the queue's verbs,
/// `verify`, `view`): the exit code is `FailureCategory`'s.
enum CommandLineExit {
    /// Says why `error` ended the command line that `command` parsed, and returns the exit code: the help
    /// (`--help`, `--version`) on stdout and 0; a config file's problem or a usage error in one line on
    /// stderr, after `prefix`, and 2; a `HaulError` (the password prompt's) in one line and its category's code.
    static func code(for error: any Error, parsing command: any ParsableCommand.Type, prefix: String) -> Int32 {
        switch error {
        case let problem as ConfigFile.Problem:
            TextOutput.standard.err(prefix + problem.message)
            return FailureCategory.usage.exitCode
        case let problem as HaulError:
            TextOutput.standard.err(prefix + problem.message)
            return problem.category.exitCode
        default:
            if command.exitCode(for: error) == .success {
                print(command.fullMessage(for: error))
                return 0
            }
            TextOutput.standard.err(prefix + command.message(for: error))
            return FailureCategory.usage.exitCode
        }
    }
}
