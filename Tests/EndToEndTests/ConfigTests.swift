import Foundation
import HaulCore
import SampleServer
import Testing
import TestSupport

/// The config file, `$XDG_CONFIG_HOME/haul/config.toml`, read by the real binary.
@Suite struct ConfigTests {
    /// A home directory with a config file in its standard place.
    struct Home {
        let dir = TempDirectory()
        let service = ServiceHome()

        var configPath: String { dir.file("config/haul/config.toml") }
        var environment: [String: String] {
            service.environment.merging(["HOME": dir.path, "XDG_CONFIG_HOME": dir.file("config")]) { $1 }
        }

        func write(_ text: String, mode: mode_t = 0o644) throws {
            try FileManager.default.createDirectory(atPath: dir.file("config/haul"), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: URL(fileURLWithPath: configPath))
            chmod(configPath, mode)
        }

        func haul(_ arguments: [String]) async throws -> HaulProcess.Exit {
            try await HaulProcess.run(arguments, in: dir.path, environment: environment)
        }
    }

    @Test func theFilesSettingsApplyAndTheCommandLineWins() async throws {
        let home = Home()
        try home.write("""
            # where everything goes: relative to the home directory
            output-dir = "from-config"
            segments = 2
            header = ["X-One: 1"]
            quiet = true
            """)
        try await withSampleServer { server in
            let url = server.downloadURL("small.bin")
            let quiet = try await home.haul(["--plain", url])
            #expect(quiet.status == 0, "\(quiet.stderr)")
            #expect(quiet.stdout.isEmpty, "quiet = true")
            #expect(try FileDigest.hex(of: home.dir.file("from-config/small.bin")) == expectedSHA256("small.bin"))

            let other = try await home.haul(["--plain", "-o", "from-command-line", "-H", "X-Two: 2", url])
            #expect(other.status == 0, "\(other.stderr)")
            #expect(try FileDigest.hex(of: home.dir.file("from-command-line/small.bin")) == expectedSHA256("small.bin"))
            #expect(!FileManager.default.fileExists(atPath: home.dir.file("from-config/small.bin.1")))

            // --no-config: the current directory and the usual lines again.
            let plain = try await home.haul(["--no-config", "--plain", url])
            #expect(plain.status == 0, "\(plain.stderr)")
            #expect(plain.stdout.contains("small.bin: done"))
            #expect(FileManager.default.fileExists(atPath: home.dir.file("small.bin")))

            // --config FILE: another file, in place of the standard one.
            let other2 = home.dir.file("other.toml")
            try Data("output-dir = \"~/elsewhere\"\n".utf8).write(to: URL(fileURLWithPath: other2))
            let named = try await home.haul(["--config", other2, "--plain", url])
            #expect(named.status == 0, "\(named.stderr)")
            #expect(FileManager.default.fileExists(atPath: home.dir.file("elsewhere/small.bin")))
            #expect(named.stdout.contains("small.bin: done"), "the standard file's quiet = true is not read")
        }
    }

    /// Each bad file: one line naming the file, the line and the key; exit 2; nothing downloaded.
    @Test(arguments: [
        ("jobs = 8\nsegments = 40\n", "2: segments: --segments must be from 1 to 16, not 40"),
        ("jobs = 8\n\nbogus-key = 1\n", "3: bogus-key: unknown key (keys are the long option names: see haul --help)"),
        ("quiet = \"yes\"\n", "1: quiet: is a switch: true or false"),
        ("jobs = [1, 2]\n", "1: jobs: takes one value, not a list"),
        ("limit-rate = \"fast\"\n", "1: limit-rate: --limit-rate: 'fast' is not a rate such as 500K or 2M, from 1 (byte/s) to 1024G"),
        ("output = \"x.bin\"\n", "1: output: not a setting (it belongs to one command line)"),
        ("rpc-secret = \"hunter2\"\n", "1: rpc-secret: a secret is not kept in the config: put it in a file of mode 0600 and name that file with rpc-secret-file"),
        ("rpc-allowed-dirs = [\"~/dl\"]\n", "1: rpc-allowed-dirs: the --rpc-* options need --rpc-listen ADDR:PORT"),
        ("jobs = 8\n[service]\njobs = 2\n", "2: service: tables are not used: put the keys at the top of the file"),
        ("jobs = = 8\n", "1: Error while parsing value: could not determine value type"),
    ])
    func aBadFileIsOneLineNamingTheLineAndTheKey(text: String, expected: String) async throws {
        let home = Home()
        try home.write(text)
        for arguments in [["--plain", "http://127.0.0.1:1/x.bin"], ["ls"], ["service", "start"]] {
            let exit = try await home.haul(arguments)
            #expect(exit.status == 2, "\(arguments)")
            #expect(exit.stderr == "haul: \(home.configPath):\(expected)\n", "\(arguments)")
            #expect(exit.stdout.isEmpty)
        }
        #expect(!FileManager.default.fileExists(atPath: home.service.socket), "no service was started")
        #expect(!home.dir.listing().contains("x.bin"))
    }

    @Test func aFileOthersCanWriteOrAMissingNamedFileIsRefused() async throws {
        let home = Home()
        try home.write("jobs = 2\n", mode: 0o666)
        let open = try await home.haul(["ls"])
        #expect(open.status == 2)
        #expect(open.stderr == "haul: config file \(home.configPath) is writable by every user; `chmod o-w` it\n")

        let missing = try await home.haul(["--config", home.dir.file("nope.toml"), "ls"])
        #expect(missing.status == 2)
        #expect(missing.stderr == "haul: config file \(home.dir.file("nope.toml")): No such file or directory\n")

        // The standard file missing is no error.
        try FileManager.default.removeItem(atPath: home.configPath)
        let none = try await home.haul(["--version"])
        #expect(none.status == 0, "\(none.stderr)")
    }

    /// The aria2 face switched on by the file alone: by `haul service start`, and by a client that starts
    /// the service on its own (`haul add`).
    @Test func rpcListenInTheFileTurnsOnTheAria2Face() async throws {
        let home = Home()
        try FileManager.default.createDirectory(atPath: home.dir.file("dl"), withIntermediateDirectories: true)
        try home.write("""
            rpc-listen = "127.0.0.1:0"
            rpc-allowed-dirs = ["~/dl", "more"]
            output-dir = "~/dl"
            idle-exit = \(RPCService.idleExit)
            """)
        for starter in [["service", "start"], ["add", "--retries", "0", "http://127.0.0.1:1/x.bin"]] {
            let start = try await home.haul(starter)
            #expect(start.status == 0, "\(starter): \(start.stderr)")
            let status = try await home.haul(["service", "status", "--json"])
            let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
            let rpc = try #require(object["rpc"] as? [String: Any], "\(starter): \(status.stdout)")
            let url = try #require(rpc["url"] as? String)
            let secretFile = try #require(rpc["secretFile"] as? String)
            let secret = try String(contentsOfFile: secretFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            // `dir` under an allowed root from the file is taken; one outside is refused.
            let body = { (dir: String) in
                #"{"jsonrpc":"2.0","id":1,"method":"aria2.addUri","params":["token:\#(secret)",["http://127.0.0.1:1/y.bin"],{"dir":"\#(dir)","pause":"true"}]}"#
            }
            let inside = try await runProcess(["/usr/bin/curl", "-s", "--data-binary", body(home.dir.file("more")), url])
            #expect(inside.output.contains(#""result":""#), "\(inside.output)")
            let outside = try await runProcess(["/usr/bin/curl", "-s", "--data-binary", body("/etc"), url])
            #expect(outside.output.contains(#""code":1"#), "\(outside.output)")
            let stop = try await home.haul(["service", "stop"])
            #expect(stop.status == 0, "\(starter): \(stop.stderr) \(stop.stdout)")
        }
    }
}
