import Foundation
import HaulCore
import SampleServer
import Testing
import TestSupport

/// `--on-complete` and `--on-error`: what the command is told, that no shell reads it, and that a slow one
/// never holds a download slot.
@Suite struct HookTests {
    /// A hook command that writes its arguments and HAUL_* environment to `OUT/STATUS-NAME`, after waiting
    /// for `OUT/release` when `OUT/hold` exists. The script is run by `/bin/sh PATH` rather than executed
    /// itself: a script this process just wrote can be "text file busy" for a moment when a parallel test
    /// forks while its write descriptor is open (the fork inherits it), and the hook would then fail to start.
    static func script(in dir: TempDirectory) throws -> String {
        let path = dir.file("hook.sh")
        try Data("""
            #!/bin/sh
            if [ -e "$HOOK_OUT/hold" ]; then
              while [ ! -e "$HOOK_OUT/release" ]; do sleep 0.02; done
            fi
            { echo "ARGS=$*"; env | grep '^HAUL_' | sort; } > "$HOOK_OUT/$HAUL_STATUS-$HAUL_NAME"

            """.utf8).write(to: URL(fileURLWithPath: path))
        return "/bin/sh \(path)"
    }

    static func fields(_ path: String) throws -> [String: String] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return fields
    }

    @Test func theHooksAreToldWhatHappenedAndNoShellReadsTheCommand() async throws {
        let dir = TempDirectory()
        let hook = try Self.script(in: dir)
        let out = dir.file("hooks")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        try await withSampleServer { server in
            let good = server.downloadURL("small.bin")
            let missing = server.downloadURL("nope.bin")
            let run = try await HaulProcess.run(
                ["--plain", "--retries", "0", "-o", "dl", "--on-complete", "\(hook) 'two words' ; touch \(dir.file("pwned"))",
                 "--on-error", hook, good, missing],
                in: dir.path, environment: ["HOOK_OUT": out])
            #expect(run.status == 8, "\(run.stderr)")
            #expect(FileManager.default.fileExists(atPath: out + "/done-small.bin"), "\(run.stderr)")
            let done = try Self.fields(out + "/done-small.bin")
            #expect(done["HAUL_FILE"] == dir.file("dl/small.bin"))
            #expect(done["HAUL_DIR"] == dir.file("dl"))
            #expect(done["HAUL_URL"] == good)
            #expect(done["HAUL_SIZE"] == "1048576")
            #expect(done["HAUL_EXIT_CODE"] == "0")
            #expect(done["HAUL_ID"] != nil)
            // The words as written, `;` and all: no shell ran them.
            #expect(done["ARGS"] == "two words ; touch \(dir.file("pwned"))")
            #expect(!FileManager.default.fileExists(atPath: dir.file("pwned")))

            let failed = try Self.fields(out + "/failed-nope.bin")
            #expect(failed["HAUL_EXIT_CODE"] == "8")
            #expect(failed["HAUL_ERROR"]?.contains("404") == true, "\(failed)")
            #expect(failed["HAUL_SIZE"] == "")

            // --hook-shell: the same command through /bin/sh, `;` and all.
            let shell = try await HaulProcess.run(
                ["--plain", "-o", "dl2", "--hook-shell", "--on-complete", "\(hook) x; touch \(dir.file("shell-ran"))", good],
                in: dir.path, environment: ["HOOK_OUT": out])
            #expect(shell.status == 0, "\(shell.stderr)")
            #expect(FileManager.default.fileExists(atPath: dir.file("shell-ran")))

            let unclosed = try await HaulProcess.run(["--on-complete", "echo 'oops", good], in: dir.path)
            #expect(unclosed.status == 2)
            #expect(unclosed.stderr == "haul: --on-complete 'echo 'oops': an unclosed quote, or no command\n")
        }
    }

    /// -j 1 and a hook that waits: the second download runs while the first one's hook still waits, and
    /// haul exits only after both hooks ended.
    @Test func aSlowHookNeverHoldsADownloadSlot() async throws {
        let dir = TempDirectory()
        let hook = try Self.script(in: dir)
        let out = dir.file("hooks")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: out + "/hold", contents: nil)
        try await withSampleServer { server in
            let process = try HaulProcess(["--plain", "-j", "1", "-o", "dl", "--on-complete", hook,
                                           server.downloadURL("small.bin"), server.downloadURL("medium.bin")],
                                          in: dir.path, environment: ["HOOK_OUT": out])
            let second: String?
            do {
                second = try await within(60, "the second download, while the first hook waits") {
                    await process.firstLine { $0.hasPrefix("medium.bin: done") }
                }
            } catch {
                process.send(SIGKILL)
                throw error
            }
            #expect(second != nil, "the second download ran while the first hook waited")
            #expect(!FileManager.default.fileExists(atPath: out + "/done-small.bin"), "the first hook still waits")
            _ = FileManager.default.createFile(atPath: out + "/release", contents: nil)
            let exit = await process.wait()
            #expect(exit.status == 0, "\(exit.stderr)")
            #expect(FileManager.default.fileExists(atPath: out + "/done-small.bin"))
            #expect(FileManager.default.fileExists(atPath: out + "/done-medium.bin"), "haul waited for the hooks")
        }
    }

    /// haul ignores the signals it takes through a stream (Ctrl-C, SIGTERM, SIGHUP) and SIGXFSZ, and an
    /// ignored signal stays ignored across exec: a hook must get the default actions back, or a Ctrl-C meant
    /// for it, or a `kill` of it, would do nothing.
    @Test func aHookStartsWithTheDefaultSignalActions() async throws {
        let dir = TempDirectory()
        let out = dir.file("hooks")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let script = dir.file("signals.sh")
        // `exec`: grep reads its own masks, which it has from the hook, not the shell's while it forks.
        try Data("exec grep -E '^Sig(Ign|Blk):' /proc/self/status > \"$HOOK_OUT/signals\"\n".utf8)
            .write(to: URL(fileURLWithPath: script))
        try await withSampleServer { server in
            let run = try await HaulProcess.run(
                ["--plain", "-q", "-o", "dl", "--on-complete", "/bin/sh \(script)", server.downloadURL("small.bin")],
                in: dir.path, environment: ["HOOK_OUT": out])
            #expect(run.status == 0, "\(run.stderr)")
            let text = try String(contentsOfFile: out + "/signals", encoding: .utf8)
            var masks: [String: UInt64] = [:]
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: ":").map { $0.trimmingCharacters(in: .whitespaces) }
                if parts.count == 2 { masks[parts[0]] = UInt64(parts[1], radix: 16) }
            }
            let ignored = try #require(masks["SigIgn"], "\(text)")
            let blocked = try #require(masks["SigBlk"], "\(text)")
            for number in [SIGHUP, SIGINT, SIGPIPE, SIGTERM, SIGXFSZ] {
                let bit = UInt64(1) << UInt64(number - 1)
                #expect(ignored & bit == 0, "signal \(number) ignored in the hook: \(text)")
                #expect(blocked & bit == 0, "signal \(number) blocked in the hook: \(text)")
            }
        }
    }
}
