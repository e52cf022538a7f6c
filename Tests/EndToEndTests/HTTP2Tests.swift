import Foundation
import HaulCore
import SampleServer
import Testing
import TestSupport

/// Over HTTPS with HTTP/2 (nginx from Debian, a test CA): `-s N`'s segments are TCP connections of their
/// own, never streams of one connection (a limit per connection would limit them all together), while many
/// small files from the host share one connection as streams. nginx's access log says which connection
/// carried each request.
@Suite struct HTTP2Tests {
    @Test func segmentsAreConnectionsOfTheirOwnWhileSmallFilesShareOne() async throws {
        let ca = try await NetworkOptionsTests.TestCA.make()
        let nginx = try await Nginx.start(certificate: (ca.serverCertificate, ca.serverKey)) { root in
            try Data(GeneratedFile(name: "big.bin", size: 12 << 20).bytes(offset: 0, count: 12 << 20))
                .write(to: URL(fileURLWithPath: root + "/big.bin"))
            for n in 0..<16 {
                try Data(repeating: UInt8(n), count: 64 << 10).write(to: URL(fileURLWithPath: root + "/s\(n).bin"))
            }
        }
        defer { nginx.stop() }
        let dir = TempDirectory()

        let segmented = try await HaulProcess.run(["--plain", "-q", "--cacert", ca.caCertificate, "-s", "4", "-o", "a",
                                                   nginx.url("big.bin")], in: dir.path)
        #expect(segmented.status == 0, "\(segmented.stderr)")
        #expect(try FileDigest.hex(of: dir.file("a/big.bin")) == FileDigest.hex(of: nginx.root + "/big.bin"))
        let ranges = nginx.requests().filter { $0.path == "/big.bin" && $0.method == "GET" }
        // Four at once (nginx limits each connection to 2 MiB/s here, so all four pay); a fifth when a segment
        // that stopped mid-response (its connection cannot be reused) goes on with a range taken from another.
        #expect(Set(ranges.map(\.connection)).count >= 4, "\(ranges)")
        #expect(ranges.allSatisfy { $0.protocolVersion == "HTTP/1.1" && $0.status == 206 }, "\(ranges)")
        // The other three connections opened beside the probe, as HEAD requests over HTTP/1.1 (for the segments
        // to take over from curl's cache).
        let ahead = nginx.requests().filter { $0.path == "/big.bin" && $0.method == "HEAD" }
        #expect(ahead.count == 3 && ahead.allSatisfy { $0.protocolVersion == "HTTP/1.1" }, "\(ahead)")
        // ... and the segments took them: no connection of their own beside one opened for them.
        #expect(Set(ahead.map(\.connection)).isSubset(of: Set(ranges.map(\.connection))), "\(ahead) \(ranges)")

        let smallURLs = (0..<16).map { nginx.url("s\($0).bin") }
        let small = try await HaulProcess.run(["--plain", "-q", "--cacert", ca.caCertificate, "-j", "8", "-o", "b"]
                                              + smallURLs, in: dir.path)
        #expect(small.status == 0, "\(small.stderr)")
        let shared = nginx.requests().filter { $0.path.hasPrefix("/s") }
        #expect(shared.count == 16)
        #expect(Set(shared.map(\.connection)).count == 1, "\(shared)")
        #expect(shared.allSatisfy { $0.protocolVersion == "HTTP/2.0" }, "\(shared)")
    }
}

extension HTTP2Tests {
    /// A download that shares its host with no other takes a connection of its own and asks HTTP/1.1 (one
    /// stream gains nothing from HTTP/2 and pays for its framing); `--http2` still gets HTTP/2; downloads
    /// queued together for one host are streams of one HTTP/2 connection even one at a time.
    @Test func aDownloadAloneOnItsHostAsksHTTP11() async throws {
        let ca = try await NetworkOptionsTests.TestCA.make()
        let nginx = try await Nginx.start(certificate: (ca.serverCertificate, ca.serverKey)) { root in
            for n in 0..<4 {
                try Data(repeating: UInt8(n), count: 96 << 10).write(to: URL(fileURLWithPath: root + "/f\(n).bin"))
            }
        }
        defer { nginx.stop() }
        let dir = TempDirectory()
        let run = { (arguments: [String]) async throws in
            let result = try await HaulProcess.run(["--plain", "-q", "--cacert", ca.caCertificate] + arguments,
                                                   in: dir.path)
            #expect(result.status == 0, "\(result.stderr)")
        }
        let logged = { (name: String) in nginx.requests().filter { $0.path == "/" + name } }

        try await run(["-o", "a", nginx.url("f0.bin")])
        #expect(logged("f0.bin").map(\.protocolVersion) == ["HTTP/1.1"], "\(logged("f0.bin"))")
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("a/f0.bin"))) == Data(repeating: 0, count: 96 << 10))

        try await run(["--http2", "-o", "b", nginx.url("f1.bin")])
        #expect(logged("f1.bin").map(\.protocolVersion) == ["HTTP/2.0"], "\(logged("f1.bin"))")

        // One at a time: the second waits while the first runs, so both are streams of one connection.
        try await run(["-j", "1", "-o", "c", nginx.url("f2.bin"), nginx.url("f3.bin")])
        let queued = logged("f2.bin") + logged("f3.bin")
        #expect(queued.count == 2 && queued.allSatisfy { $0.protocolVersion == "HTTP/2.0" }, "\(queued)")
        #expect(Set(queued.map(\.connection)).count == 1, "\(queued)")
    }

    /// Whether a download shares its host is decided as it starts, from the downloads running and the next
    /// `-j` waiting: with `-j 1` the first of [host 1, host 2, host 1] sees only the second (another host)
    /// and asks HTTP/1.1; with `-j 2` it sees the third too, and stays on HTTP/2.
    @Test func theQueueLooksAheadAsFarAsJobsRunAtOnce() async throws {
        let ca = try await NetworkOptionsTests.TestCA.make()
        let fill = { (root: String) throws in
            for n in 0..<3 {
                try Data(repeating: UInt8(n), count: 32 << 10).write(to: URL(fileURLWithPath: root + "/q\(n).bin"))
            }
        }
        let one = try await Nginx.start(certificate: (ca.serverCertificate, ca.serverKey), fill: fill)
        defer { one.stop() }
        let two = try await Nginx.start(certificate: (ca.serverCertificate, ca.serverKey), fill: fill)
        defer { two.stop() }
        let dir = TempDirectory()
        for (jobs, expected) in [("1", "HTTP/1.1"), ("2", "HTTP/2.0")] {
            let result = try await HaulProcess.run(
                ["--plain", "-q", "--cacert", ca.caCertificate, "-j", jobs, "-o", "j" + jobs,
                 one.url("q0.bin"), two.url("q1.bin"), one.url("q2.bin")], in: dir.path)
            #expect(result.status == 0, "\(result.stderr)")
            let first = one.requests().filter { $0.path == "/q0.bin" }.last
            #expect(first?.protocolVersion == expected, "-j \(jobs): \(one.requests())")
        }
    }
}

extension HTTP2Tests {
    /// Transfers that never multiplex (`-s N`'s segments: HTTP/1.1, a connection each) beside ones that share
    /// an HTTP/2 connection, all to one host: libcurl 7.88 put some of the small files' requests on the
    /// segments' busy HTTP/1.1 connections, where each transfer read whichever answer came first (small files
    /// of one size swapped contents and were named as done; others failed "received HTTP/0.9"). Every file
    /// must hold its own bytes.
    @Test func smallFilesBesideSegmentsOfTheirHostKeepTheirOwnBytes() async throws {
        let ca = try await NetworkOptionsTests.TestCA.make()
        let smalls = 160
        let nginx = try await Nginx.start(certificate: (ca.serverCertificate, ca.serverKey)) { root in
            try Data(GeneratedFile(name: "big.bin", size: 12 << 20).bytes(offset: 0, count: 12 << 20))
                .write(to: URL(fileURLWithPath: root + "/big.bin"))
            for n in 0..<smalls {
                try Data(GeneratedFile(name: "m\(n).bin", size: 16 << 10).bytes(offset: 0, count: 16 << 10))
                    .write(to: URL(fileURLWithPath: root + "/m\(n).bin"))
            }
        }
        defer { nginx.stop() }
        let dir = TempDirectory()
        let list = [nginx.url("big.bin"), "  segments=4"] + (0..<smalls).map { nginx.url("m\($0).bin") }
        try Data((list.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: dir.file("urls.txt")))

        let result = try await HaulProcess.run(["--plain", "-q", "--cacert", ca.caCertificate, "-j", "16",
                                                "--retries", "0", "-o", "out", "-i", "urls.txt"], in: dir.path)
        #expect(result.status == 0, "\(result.stderr)")
        var wrong: [String] = []
        for name in ["big.bin"] + (0..<smalls).map({ "m\($0).bin" }) {
            let got = try? FileDigest.hex(of: dir.file("out/" + name))
            if got != (try FileDigest.hex(of: nginx.root + "/" + name)) { wrong.append(name) }
        }
        #expect(wrong.isEmpty, "files not holding their own bytes: \(wrong)")
        // The small files still share HTTP/2 connections, and the segments are HTTP/1.1 each.
        let requests = nginx.requests()
        #expect(requests.filter { $0.path.hasPrefix("/m") }.allSatisfy { $0.protocolVersion == "HTTP/2.0" },
                "\(requests)")
        #expect(requests.filter { $0.path == "/big.bin" }.allSatisfy { $0.protocolVersion == "HTTP/1.1" },
                "\(requests)")
    }
}

extension HTTP2Tests {
    /// On a terminal the command line's URLs go to the service together, as `--plain` queues them: small
    /// files of one host are streams of HTTP/2 connections, none asking HTTP/1.1 as a download alone on its
    /// host (sent one request each, the first was alone and the rest were not, a mix libcurl 7.88 got wrong).
    @Test func onATerminalTheURLsOfOneHostAreQueuedTogether() async throws {
        let ca = try await NetworkOptionsTests.TestCA.make()
        let count = 24
        let nginx = try await Nginx.start(certificate: (ca.serverCertificate, ca.serverKey)) { root in
            for n in 0..<count {
                try Data(repeating: UInt8(n), count: 32 << 10).write(to: URL(fileURLWithPath: root + "/t\(n).bin"))
            }
        }
        defer { nginx.stop() }
        let dir = TempDirectory()
        let tmux = try TmuxSession(["--cacert", ca.caCertificate, "-j", "4", "-o", "out"]
                                   + (0..<count).map { nginx.url("t\($0).bin") }, in: dir.path)
        try await tmux.waitFor("every download done") { $0.first?.contains("\(count) of \(count) done") == true }
        try tmux.send("q")
        _ = try await tmux.waitForExit()
        for n in 0..<count {
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("out/t\(n).bin")))
                    == Data(repeating: UInt8(n), count: 32 << 10), "t\(n).bin")
        }
        let requests = nginx.requests().filter { $0.path.hasPrefix("/t") }
        #expect(requests.count == count && requests.allSatisfy { $0.protocolVersion == "HTTP/2.0" }, "\(requests)")
    }
}

extension HTTP2Tests {
    /// A download held by its cap has a chunk waiting in its curl handle. Cancelled while another download
    /// still used its HTTP/2 connection, libcurl 7.88 left that chunk in the handle, which haul then reset
    /// and gave to the next transfer: when that one's own cap let it go on, it got the cancelled download's
    /// bytes first ("the server sent more than the ... bytes it announced", or, in a segment, a range
    /// shifted and named done).
    @Test func aCancelledCappedDownloadsBytesNeverReachTheNextOne() async throws {
        let ca = try await NetworkOptionsTests.TestCA.make()
        let nginx = try await Nginx.start(certificate: (ca.serverCertificate, ca.serverKey)) { root in
            for (name, size) in [("big.bin", 12 << 20), ("a.bin", 4 << 20), ("c.bin", 48 << 10)] {
                try Data(GeneratedFile(name: name, size: size).bytes(offset: 0, count: size))
                    .write(to: URL(fileURLWithPath: root + "/" + name))
            }
        }
        defer { nginx.stop() }
        let home = ServiceHome()
        let dir = TempDirectory()
        let add = { (lines: [String]) async throws in
            try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: dir.file("urls.txt")))
            let added = try await SessionTests.haul(["add", "-q", "--cacert", ca.caCertificate, "-o", "out",
                                                     "-i", "urls.txt"], home, in: dir)
            #expect(added.status == 0, "\(added.stderr)")
        }
        // Together, so that both are streams of one HTTP/2 connection; big.bin is slow (nginx: 2 MiB/s).
        try await add([nginx.url("big.bin"), nginx.url("a.bin"), "  limit-rate=64K"])
        try await SessionTests.waitFor("a.bin held by its cap", home) { ($0[2]?.completed ?? 0) > 0 }
        let cancel = try await SessionTests.haul(["cancel", "2"], home, in: dir)
        #expect(cancel.status == 0, "\(cancel.stderr)")
        try await SessionTests.waitFor("a.bin cancelled", home) { $0[2]?.state == .cancelled }

        try await add([nginx.url("c.bin"), "  limit-rate=32K"])
        try await SessionTests.waitFor("c.bin ended", home) { seen in
            switch seen[3]?.state {
            case .done?, .failed?: true
            default: false
            }
        }
        let listed = try await SessionTests.list(home, in: dir)
        let c = try #require(listed.first { $0["id"] as? Int == 3 })
        #expect(c["state"] as? String == "done", "\(c)")
        #expect(try FileDigest.hex(of: dir.file("out/c.bin")) == FileDigest.hex(of: nginx.root + "/c.bin"))
        _ = try await SessionTests.haul(["cancel", "--all"], home, in: dir)
    }
}

/// nginx from Debian in the foreground on a free loopback port, serving a directory over TLS with HTTP/2,
/// logging each request with the number of the connection that carried it.
final class Nginx: Sendable {
    struct Request: Sendable, CustomStringConvertible {
        let connection: Int
        let status: Int
        let protocolVersion: String
        let method: String
        let path: String
        var description: String { "#\(connection) \(protocolVersion) \(method) \(status) \(path)" }
    }

    let port: Int
    let root: String
    private let dir: String
    private let process: Process

    private init(port: Int, root: String, dir: String, process: Process) {
        self.port = port
        self.root = root
        self.dir = dir
        self.process = process
    }

    /// `fill` writes the files to serve into the root directory it is given.
    static func start(certificate: (String, String), fill: (String) throws -> Void) async throws -> Nginx {
        let dir = NSTemporaryDirectory() + "nginx-\(UUID().uuidString)"
        let root = dir + "/www"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try fill(root)
        let port = try freeLoopbackPort()
        let config = dir + "/nginx.conf"
        // As root, the workers stay root: they read the test's private temporary directories.
        let user = geteuid() == 0 ? "user root root;" : ""
        try Data("""
            \(user)
            worker_processes 1;
            daemon off;
            pid \(dir)/nginx.pid;
            error_log \(dir)/error.log warn;
            events { worker_connections 256; }
            http {
              log_format haul '$connection $status $server_protocol $request_method $uri';
              access_log \(dir)/access.log haul;
              client_body_temp_path \(dir); proxy_temp_path \(dir); fastcgi_temp_path \(dir);
              uwsgi_temp_path \(dir); scgi_temp_path \(dir);
              server {
                listen 127.0.0.1:\(port) ssl http2;
                ssl_certificate \(certificate.0);
                ssl_certificate_key \(certificate.1);
                root \(root);
                # Slow enough per connection that -s 4 keeps all four (its race keeps one connection only
                # where one is not the limit), and that none can finish its piece before the last starts:
                # on loopback at full speed a loaded machine saw the fourth's range taken by the others.
                location = /big.bin { limit_rate 2m; }
              }
            }

            """.utf8).write(to: URL(fileURLWithPath: config))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-p", dir, "-e", dir + "/error.log", "-c", config]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let nginx = Nginx(port: port, root: root, dir: dir, process: process)
        // nginx writes its pid file once its sockets listen.
        try await waitForFiles(in: dir, "nginx to listen", within: .seconds(30)) {
            FileManager.default.fileExists(atPath: dir + "/nginx.pid") || !process.isRunning
        }
        try #require(process.isRunning, "nginx did not start: \((try? String(contentsOfFile: dir + "/error.log", encoding: .utf8)) ?? "")")
        return nginx
    }

    func url(_ name: String) -> String { "https://127.0.0.1:\(port)/\(name)" }

    /// Every request logged so far (nginx writes a line as each request ends).
    func requests() -> [Request] {
        let text = (try? String(contentsOfFile: dir + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count == 5, let connection = Int(fields[0]), let status = Int(fields[1]) else { return nil }
            return Request(connection: connection, status: status, protocolVersion: fields[2], method: fields[3],
                           path: fields[4])
        }
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: dir)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
