import Foundation
import HaulCore
import SampleServer
import Testing
import TestSupport

/// What a curl or wget user reaches for: a private certificate authority, a proxy, logins and cookies,
/// against real servers on loopback (the sample server over TLS with a test CA, tinyproxy from Debian).
@Suite struct NetworkOptionsTests {
    static let login = "ann:s3cret-Pw.42"
    static let password = "s3cret-Pw.42"

    /// A certificate authority of the test's own and a server certificate for 127.0.0.1 and localhost it
    /// signed, made with openssl.
    struct TestCA {
        let dir = TempDirectory()
        var caCertificate: String { dir.file("ca.pem") }
        var serverCertificate: String { dir.file("server.pem") }
        var serverKey: String { dir.file("server.key") }

        static func make() async throws -> TestCA {
            let ca = TestCA()
            let openssl = "/usr/bin/openssl"
            for command in [
                [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca.dir.file("ca.key"),
                 "-out", ca.caCertificate, "-days", "2", "-subj", "/CN=Haul Test CA"],
                [openssl, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", ca.serverKey, "-out", ca.dir.file("server.csr"),
                 "-subj", "/CN=localhost"],
                [openssl, "x509", "-req", "-in", ca.dir.file("server.csr"), "-CA", ca.caCertificate,
                 "-CAkey", ca.dir.file("ca.key"), "-CAcreateserial", "-out", ca.serverCertificate, "-days", "2",
                 "-extfile", ca.dir.file("ext")],
            ] {
                if command.contains("-extfile") {
                    try Data("subjectAltName=IP:127.0.0.1,DNS:localhost\n".utf8).write(to: URL(fileURLWithPath: ca.dir.file("ext")))
                }
                let run = try await runProcess(command)
                try #require(run.status == 0, "\(command.joined(separator: " ")): \(run.output)")
            }
            return ca
        }
    }

    @Test func aPrivateCAIsTrustedWithCacertOrCapathAndOnlyThen() async throws {
        let ca = try await TestCA.make()
        var configuration = SampleServerConfiguration(port: 0, jpegs: false)
        configuration.tls = (ca.serverCertificate, ca.serverKey)
        let dir = TempDirectory()
        try await withSampleServer(configuration) { server in
            let url = server.downloadURL("small.bin")
            #expect(url.hasPrefix("https://127.0.0.1:"))
            let untrusted = try await HaulProcess.run(["--plain", "--retries", "0", "-o", "a", url], in: dir.path)
            #expect(untrusted.status == 5, "\(untrusted.stderr)")
            #expect(!FileManager.default.fileExists(atPath: dir.file("a/small.bin")))

            let cacert = try await HaulProcess.run(["--plain", "--cacert", ca.caCertificate, "-o", "b", url], in: dir.path)
            #expect(cacert.status == 0, "\(cacert.stderr)")
            #expect(try FileDigest.hex(of: dir.file("b/small.bin")) == expectedSHA256("small.bin"))

            // A c_rehash directory holding the CA.
            let hashed = dir.file("certs")
            try FileManager.default.createDirectory(atPath: hashed, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: ca.caCertificate, toPath: hashed + "/ca.pem")
            let rehash = try await runProcess(["/usr/bin/openssl", "rehash", hashed])
            try #require(rehash.status == 0, "\(rehash.output)")
            let capath = try await HaulProcess.run(["--plain", "-s", "4", "--capath", hashed, "-o", "c",
                                                    server.downloadURL("medium.bin")], in: dir.path)
            #expect(capath.status == 0, "\(capath.stderr)")
            #expect(try FileDigest.hex(of: dir.file("c/medium.bin")) == expectedSHA256("medium.bin"))

            let missing = try await HaulProcess.run(["--cacert", dir.file("nope.pem"), url], in: dir.path)
            #expect(missing.status == 2)
            #expect(missing.stderr == "haul: --cacert \(dir.file("nope.pem")): no such file\n")
        }
    }

    /// tinyproxy, started here, sees haul's requests with `--proxy` and none with `--noproxy`.
    @Test func downloadsGoThroughTheProxyAndAroundItWithNoproxy() async throws {
        let proxy = try await Tinyproxy.start()
        let dir = TempDirectory()
        try await withSampleServer { server in
            let url = server.downloadURL("medium.bin")
            let through = try await HaulProcess.run(["--plain", "-s", "2", "--proxy", "http://127.0.0.1:\(proxy.port)",
                                                     "-o", "a", url], in: dir.path)
            #expect(through.status == 0, "\(through.stderr)")
            #expect(try FileDigest.hex(of: dir.file("a/medium.bin")) == expectedSHA256("medium.bin"))
            let seen = await proxy.requests()
            #expect(seen.contains { $0.contains("GET \(url)") }, "\(seen)")

            let around = try await HaulProcess.run(["--plain", "--proxy", "http://127.0.0.1:\(proxy.port)",
                                                    "--noproxy", "127.0.0.1", "-o", "b", server.downloadURL("small.bin")],
                                                   in: dir.path)
            #expect(around.status == 0, "\(around.stderr)")
            #expect(!(await proxy.requests()).contains { $0.contains("small.bin") })

            let badScheme = try await HaulProcess.run(["--proxy", "ftp://127.0.0.1:1", url], in: dir.path)
            #expect(badScheme.status == 2)
            #expect(badScheme.stderr.contains("the scheme must be http, https, socks4, socks4a, socks5 or socks5h"))
        }
        proxy.stop()
    }

    /// Basic authentication from `--user USER:PASSWORD` and from a netrc file; the password is in no output,
    /// no file and not in the process's arguments while it runs.
    @Test func aLoginFromUserOrNetrcAndThePasswordNowhere() async throws {
        var configuration = SampleServerConfiguration(port: 0, rate: 8 << 20, jpegs: false)
        configuration.login = Self.login
        let dir = TempDirectory()
        try await withSampleServer(configuration) { server in
            let url = server.downloadURL("medium.bin")
            let refused = try await HaulProcess.run(["--plain", "--retries", "0", "-o", "a", url], in: dir.path)
            #expect(refused.status == 6, "\(refused.stderr)")

            let running = try HaulProcess(["--json", "--user", Self.login, "-o", "b", url], in: dir.path)
            _ = await running.firstLine { $0.contains("\"progress\"") || $0.contains("\"started\"") }
            let arguments = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(running.pid)/cmdline"))
            #expect(!String(decoding: arguments, as: UTF8.self).contains(Self.password), "the password is blanked in argv")
            #expect(String(decoding: arguments, as: UTF8.self).contains("ann:"))
            let json = await running.wait()
            #expect(json.status == 0, "\(json.stderr)")
            #expect(try FileDigest.hex(of: dir.file("b/medium.bin")) == expectedSHA256("medium.bin"))

            let netrc = dir.file("netrc")
            try Data("machine 127.0.0.1 login ann password \(Self.password)\n".utf8).write(to: URL(fileURLWithPath: netrc))
            chmod(netrc, 0o600)
            let fromNetrc = try await HaulProcess.run(["--plain", "--netrc-file", netrc, "-o", "c",
                                                       server.downloadURL("small.bin")], in: dir.path)
            #expect(fromNetrc.status == 0, "\(fromNetrc.stderr)")
            #expect(try FileDigest.hex(of: dir.file("c/small.bin")) == expectedSHA256("small.bin"))

            let wrong = try await HaulProcess.run(["--plain", "--retries", "0", "--user", "ann:wrong", "-o", "d",
                                                   server.downloadURL("small.bin")], in: dir.path)
            #expect(wrong.status == 6)

            for output in [refused.stdout, refused.stderr, json.stdout, json.stderr, fromNetrc.stdout, wrong.stderr] {
                #expect(!output.contains(Self.password))
            }
            let holding = try TestFiles.containing(Self.password, under: dir.path).filter { $0 != netrc }
            #expect(holding.isEmpty, "\(holding)")
        }
    }

    /// Through the service: the password works while the service lives and is in no file of its state.
    @Test func theServiceUsesTheLoginAndNeverStoresThePassword() async throws {
        var configuration = SampleServerConfiguration(port: 0, jpegs: false)
        configuration.login = Self.login
        let home = ServiceHome()
        let dir = TempDirectory()
        try await withSampleServer(configuration) { server in
            let add = try await HaulProcess.run(["add", "--user", Self.login, "-o", "out", server.downloadURL("small.bin")],
                                                in: dir.path, environment: home.environment)
            #expect(add.status == 0, "\(add.stderr)")
            try await SessionTests.waitFor("the download", home) { $0[1]?.state == .done }
            #expect(try FileDigest.hex(of: dir.file("out/small.bin")) == expectedSHA256("small.bin"))
            let list = try await HaulProcess.run(["ls", "--json"], in: dir.path, environment: home.environment)
            #expect(!list.stdout.contains(Self.password))
            _ = try await HaulProcess.run(["service", "stop"], in: dir.path, environment: home.environment)
            #expect(try TestFiles.containing(Self.password, under: home.path).isEmpty)
            #expect(try TestFiles.containing(Self.password, under: dir.path).isEmpty)
        }
    }

    /// `--user ann` alone asks on the terminal, without echo.
    @Test func theMissingPasswordIsAskedForOnTheTerminalUnechoed() async throws {
        var configuration = SampleServerConfiguration(port: 0, jpegs: false)
        configuration.login = Self.login
        let dir = TempDirectory()
        try await withSampleServer(configuration) { server in
            let tmux = try TmuxSession(["--plain", "--user", "ann", "-o", "out", server.downloadURL("small.bin")], in: dir.path)
            try await tmux.waitFor("the prompt") { $0.contains { $0.contains("Enter host password for user 'ann':") } }
            try tmux.send(contentsOf: ["-l", Self.password])
            try tmux.send("Enter")
            let (status, screen) = try await tmux.waitForExit()
            #expect(status == 0, "\(screen)")
            #expect(!screen.joined().contains(Self.password))
            #expect(screen.contains { $0.contains("modes: icanon echo") }, "echo is back on")
            #expect(try FileDigest.hex(of: dir.file("out/small.bin")) == expectedSHA256("small.bin"))
        }
    }

    /// A cookie-protected URL with `--load-cookies` (what yt-dlp passes), and the jar of `--save-cookies`.
    @Test func cookiesFromAFileAndIntoAJar() async throws {
        var configuration = SampleServerConfiguration(port: 0, jpegs: false)
        configuration.cookie = "session=abc123"
        let dir = TempDirectory()
        try await withSampleServer(configuration) { server in
            let url = server.downloadURL("small.bin")
            let refused = try await HaulProcess.run(["--plain", "--retries", "0", "-o", "a", url], in: dir.path)
            #expect(refused.status == 8, "\(refused.stderr)")

            let cookies = dir.file("cookies.txt")
            try Data("# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\tabc123\n".utf8)
                .write(to: URL(fileURLWithPath: cookies))
            let jar = dir.file("jar.txt")
            let loaded = try await HaulProcess.run(["--plain", "--load-cookies", cookies, "--save-cookies", jar, "-o", "b", url],
                                                   in: dir.path)
            #expect(loaded.status == 0, "\(loaded.stderr)")
            #expect(try FileDigest.hex(of: dir.file("b/small.bin")) == expectedSHA256("small.bin"))
            let saved = try String(contentsOfFile: jar, encoding: .utf8)
            #expect(saved.contains("session\tabc123") && saved.contains("sample-visits"), "\(saved)")
        }
    }

    @Test func addressFamilyInterfaceAndHTTPVersion() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let url = server.downloadURL("small.bin")
            for (index, options) in [["-4"], ["--interface", "lo"], ["--http1.1"], ["--http2"]].enumerated() {
                let run = try await HaulProcess.run(["--plain"] + options + ["-o", "out\(index)", url], in: dir.path)
                #expect(run.status == 0, "\(options): \(run.stderr)")
                #expect(try FileDigest.hex(of: dir.file("out\(index)/small.bin")) == expectedSHA256("small.bin"))
            }
            // The server listens on IPv4 only: -6 to localhost reaches nothing.
            let v6 = try await HaulProcess.run(["--plain", "--retries", "0", "-6", "-o", "v6",
                                                "http://localhost:\(server.port)/files/download?small.bin"], in: dir.path)
            #expect(v6.status == 4, "\(v6.stderr)")
            let both = try await HaulProcess.run(["-4", "-6", url], in: dir.path)
            #expect(both.status == 2 && both.stderr == "haul: -4 and -6 exclude each other\n")
        }
    }
}

/// tinyproxy from Debian in the foreground on a free loopback port, its log lines collected.
final class Tinyproxy: Sendable {
    let port: Int
    private let process: Process
    private let log: LineCollector
    /// Its configuration; removed with the proxy (it used to stay in the temp folder after every run).
    private let directory: TempDirectory

    private init(port: Int, process: Process, log: LineCollector, directory: TempDirectory) {
        self.port = port
        self.process = process
        self.log = log
        self.directory = directory
    }

    static func start() async throws -> Tinyproxy {
        let directory = TempDirectory()
        let port = try freeLoopbackPort()
        let config = directory.file("tinyproxy.conf")
        try Data("""
            Port \(port)
            Listen 127.0.0.1
            Timeout 60
            Allow 127.0.0.1
            LogLevel Info
            MaxClients 20

            """.utf8).write(to: URL(fileURLWithPath: config))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/tinyproxy")
        process.arguments = ["-d", "-c", config]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        let log = LineCollector(pipe.fileHandleForReading)
        try process.run()
        let proxy = Tinyproxy(port: port, process: process, log: log, directory: directory)
        try await log.waitFor("tinyproxy to listen") { $0.contains("Accepting connections") }
        return proxy
    }

    func requests() async -> [String] {
        log.lines.filter { $0.contains("Request (") }
    }

    /// SIGKILL: tinyproxy lingers after SIGTERM while it has children. Foundation reaps it.
    func stop() {
        kill(process.processIdentifier, SIGKILL)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
