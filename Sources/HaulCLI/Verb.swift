import ArgumentParser
import HaulCore

extension ParsableCommand {
    /// Parses the arguments of a verb (`haul verify ...`, `haul view ...`): the command, or the exit code after
    /// `--help` (0, printed) or a usage error (2, one line on stderr).
    static func parseVerb(_ verb: String, _ arguments: [String]) -> Result<Self, VerbExit> {
        do {
            return .success(try parse(arguments))
        } catch {
            if exitCode(for: error) == .success {
                print(fullMessage(for: error))
                return .failure(VerbExit(code: 0))
            }
            TextOutput.standard.err("haul: \(verb): " + message(for: error))
            return .failure(VerbExit(code: FailureCategory.usage.exitCode))
        }
    }
}

/// How a verb's command line ended before it ran.
struct VerbExit: Error {
    let code: Int32
}
