import Foundation
import Testing
import TestSupport

/// What a command-line tool owes its users: completions, the exit codes in --help, NO_COLOR.
@Suite struct ConventionsTests {
    @Test func completionsForBashZshAndFishNameEveryOption() async throws {
        let dir = TempDirectory()
        for shell in ["bash", "zsh", "fish"] {
            let script = try await HaulProcess.run(["--generate-completion-script", shell], in: dir.path)
            #expect(script.status == 0, "\(shell): \(script.stderr)")
            for option in ["segments", "cacert", "on-complete", "load-cookies", "config"] {
                #expect(script.stdout.contains(option), "\(shell) completes --\(option)")
            }
            if shell == "bash" {
                try Data(script.stdout.utf8).write(to: URL(fileURLWithPath: dir.file("haul.bash")))
                let syntax = try await runProcess(["/bin/bash", "-n", dir.file("haul.bash")])
                #expect(syntax.status == 0, "\(syntax.output)")
            }
        }
    }

    @Test func helpListsEveryExitCode() async throws {
        let dir = TempDirectory()
        let help = try await HaulProcess.run(["--help"], in: dir.path)
        #expect(help.status == 0)
        let text = help.stdout.replacingOccurrences(of: "\n", with: " ")
            .replacingOccurrences(of: "  ", with: " ")
        for code in ["0 all done", "1 other", "2 usage", "3 local file I/O", "4 network", "5 TLS", "6 authentication",
                     "7 protocol", "8 server error answer", "9 checksum mismatch", "10 cancelled", "129 stopped by SIGHUP",
                     "130 interrupted", "143 stopped by SIGTERM"] {
            #expect(text.contains(code), "--help lists \(code)")
        }
    }

    /// The queue's verbs answer `--help` and `haul help VERB` too, and a group named alone (`haul service`)
    /// shows its verbs.
    @Test func sessionVerbsAnswerHelp() async throws {
        let dir = TempDirectory()
        let cases: [([String], String)] = [
            (["ls", "--help"], "USAGE: haul ls"),
            (["service", "--help"], "USAGE: haul service <subcommand>"),
            (["service"], "USAGE: haul service <subcommand>"),
            (["service", "status", "-h"], "USAGE: haul service status"),
            (["help", "service", "status"], "USAGE: haul service status"),
            (["help"], "USAGE: haul [<options>]"),
        ]
        for (arguments, usage) in cases {
            let help = try await HaulProcess.run(arguments + ["--no-config"], in: dir.path)
            #expect(help.status == 0, "\(arguments): \(help.stderr)")
            #expect(help.stdout.contains(usage), "\(arguments): \(help.stdout)")
            #expect(help.stderr.isEmpty, "\(arguments)")
        }
        let service = try await HaulProcess.run(["service", "--help", "--no-config"], in: dir.path)
        for verb in ["start", "stop", "status", "run"] {
            #expect(service.stdout.contains("  \(verb) "), "haul service --help lists \(verb)")
        }
    }

    /// NO_COLOR (no-color.org): the full screen uses no colour, only bold and reverse.
    @Test func noColorMeansNoColourOnTheFullScreen() async throws {
        let dir = TempDirectory()
        var seen: [Bool: Bool] = [:]
        for noColor in [false, true] {
            // Set either way: `swift test` hands its children NO_COLOR=1. Empty means colours are welcome.
            let tmux = try TmuxSession(["--demo"], in: dir.path, environment: ["NO_COLOR": noColor ? "1" : ""])
            try await tmux.waitFor("the files view") { $0.contains { $0.contains("photo-large.jpg") } }
            let escapes = try tmux.screenWithEscapes()
            seen[noColor] = Self.selectsColour(escapes)
            try tmux.send("q")
            _ = try await tmux.waitForExit()
        }
        #expect(seen[false] == true, "colours without NO_COLOR")
        #expect(seen[true] == false, "none with NO_COLOR=1")
    }

    /// Whether an SGR sequence (`ESC [ ... m`) selects a colour: 30-38, 40-48, 90-97, 100-107.
    static func selectsColour(_ text: String) -> Bool {
        var rest = Substring(text)
        while let start = rest.range(of: "\u{1b}[") {
            rest = rest[start.upperBound...]
            guard let end = rest.firstIndex(where: { !($0.isNumber || $0 == ";") }) else { break }
            if rest[end] == "m" {
                let parameters = rest[..<end].split(separator: ";").compactMap { Int($0) }
                if parameters.contains(where: { (30...38).contains($0) || (40...48).contains($0) || (90...97).contains($0)
                    || (100...107).contains($0) }) {
                    return true
                }
            }
            rest = rest[end...]
        }
        return false
    }
}
