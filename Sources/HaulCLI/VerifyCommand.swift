import ArgumentParser
import HaulCore

/// `haul verify PATH...`: checks partial downloads (or finished files that still have their record) against
/// the block checksums haul recorded while writing them.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Re-read a NAME.part against the checksums recorded as it was written.",
        discussion: """
            Says what is good, damaged and missing. Damaged blocks are marked missing, so the next run of the \
            download fetches only them. Exit codes: 0 every recorded block is good, 9 some block is damaged, \
            1 or 3 when a file cannot be checked (no record, in use, unreadable).
            """)

    @Argument(help: ArgumentHelp("A NAME.part, or NAME (its .part, or the file itself when its record is still there).",
                                 valueName: "path"))
    var paths: [String]

    /// Runs `arguments` (after the verb) and returns the exit code.
    static func run(_ arguments: [String]) -> Int32 {
        let command: VerifyCommand
        switch parseVerb("verify", arguments) {
        case .success(let parsed): command = parsed
        case .failure(let exit): return exit.code
        }
        var code: Int32 = 0
        for path in command.paths {
            do {
                let report = try PartVerify.run(path)
                TextOutput.standard.out(report.sentence)
                if report.damaged > 0 { code = max(code, FailureCategory.checksum.exitCode) }
            } catch {
                TextOutput.standard.err("haul: verify: " + error.message)
                if code == 0 || code == FailureCategory.checksum.exitCode { code = error.category.exitCode }
            }
        }
        return code
    }
}
