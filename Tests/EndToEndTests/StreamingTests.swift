import Foundation
import Testing
import TestSupport
@testable import HaulCore

/// Using a file while it arrives (issue 75, point 7), through the real binary against Debian's nginx on
/// loopback: `--sequential` asks for the file front to back (the server's own log says so), and `-O -` writes
/// one download to standard output.
@Suite(.serialized) struct StreamingTests {
    static let size = 24 << 20

    static func bytes() -> Data {
        var data = Data(count: size)
        data.withUnsafeMutableBytes { raw in
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15
            for index in 0..<raw.count {
                state ^= state << 13; state ^= state >> 7; state ^= state << 17
                raw[index] = UInt8(truncatingIfNeeded: state)
            }
        }
        return data
    }

    /// Each request's start in the server's log: a range is asked front to back when the ranges asked before
    /// it (or together with it, within `together` seconds) cover every byte before its first one, so
    /// that nothing past a gap is fetched while the gap waits.
    static func askedPastAGap(_ requests: [RangeNginx.Request], together: Double = 0.05) -> [RangeNginx.Request] {
        requests.filter { request in
            let before = requests.filter { $0.started <= request.started + together && $0.first < request.first }
            var covered: Int64 = 0
            for range in before.sorted(by: { $0.first < $1.first }) where range.first <= covered {
                covered = max(covered, range.last + 1)
            }
            return covered < request.first
        }
    }

    @Test func sequentialAsksTheRangesFrontToBack() async throws {
        let data = Self.bytes()
        let nginx = try await RangeNginx.start { try data.write(to: URL(fileURLWithPath: $0 + "/video.bin")) }
        defer { nginx.stop() }
        let dir = TempDirectory()
        defer { dir.remove() }
        let run = try await HaulProcess.run(["--plain", "--sequential", "-s", "4", "-o", "out", nginx.url("video.bin")],
                                            in: dir.path)
        #expect(run.status == 0, "\(run)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("out/video.bin"))) == data)
        let requests = nginx.requests()
        // The probe, then the chunks: more than four requests, several connections at once.
        #expect(requests.count > 4, "\(requests)")
        #expect(requests.allSatisfy { $0.status == 206 }, "\(requests)")
        #expect(Self.askedPastAGap(requests).isEmpty, "\(requests)")
    }

    /// The service keeps the job's option: `haul add --sequential` is fetched front to back by the queue.
    @Test func theServiceFetchesAnAddedDownloadFrontToBack() async throws {
        let data = Self.bytes()
        let nginx = try await RangeNginx.start { try data.write(to: URL(fileURLWithPath: $0 + "/video.bin")) }
        defer { nginx.stop() }
        let home = ServiceHome()
        let dir = TempDirectory()
        defer { dir.remove() }
        let added = try await SessionTests.haul(["add", "-q", "--sequential", "-s", "4", "-o", "out", nginx.url("video.bin")],
                                                home, in: dir)
        #expect(added.status == 0, "\(added)")
        try await SessionTests.waitFor("video.bin ended", home) { seen in
            switch seen.values.first?.state {
            case .done?, .failed?: true
            default: false
            }
        }
        _ = try await SessionTests.haul(["service", "stop"], home, in: dir)
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("out/video.bin"))) == data)
        let requests = nginx.requests()
        #expect(requests.count > 4 && Self.askedPastAGap(requests).isEmpty, "\(requests)")
    }

    /// Without `--sequential`, the same download spreads its connections over the file at once: the check
    /// above tells the two apart.
    @Test func withoutItTheConnectionsSpreadOverTheFile() async throws {
        let data = Self.bytes()
        let nginx = try await RangeNginx.start { try data.write(to: URL(fileURLWithPath: $0 + "/video.bin")) }
        defer { nginx.stop() }
        let dir = TempDirectory()
        defer { dir.remove() }
        let run = try await HaulProcess.run(["--plain", "-s", "4", "-o", "out", nginx.url("video.bin")], in: dir.path)
        #expect(run.status == 0, "\(run)")
        #expect(!Self.askedPastAGap(nginx.requests()).isEmpty, "\(nginx.requests())")
    }

    /// `haul -O - URL | sha256sum` in a shell: the digest is the file's, and nothing but the file went to
    /// standard output; no file, `.part` or state is left in the directory.
    @Test func standardOutputPipedToSha256sum() async throws {
        let data = Self.bytes()
        let nginx = try await RangeNginx.start { try data.write(to: URL(fileURLWithPath: $0 + "/video.bin")) }
        defer { nginx.stop() }
        let dir = TempDirectory()
        defer { dir.remove() }
        let shell = try await Self.shell(#""$0" -O - "$1" | sha256sum; echo "exit ${PIPESTATUS[0]}""#,
                                         nginx.url("video.bin"), in: dir.path)
        let expected = try FileDigest.hex(of: nginx.root + "/video.bin", algorithm: .sha256)
        #expect(shell.stdout == "\(expected)  -\nexit 0\n", "\(shell)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
        #expect(shell.stderr.contains("video.bin: saving to standard output") && shell.stderr.contains("video.bin: done"),
                "\(shell)")
    }

    /// The config file's settings for downloads to disk (`segments = 8`, a folder, JSON lines, a hook) do not
    /// stop `-O -`: they are left out of it, where the same options on the command line are refused.
    @Test func configSettingsForFilesDoNotStopStandardOutput() async throws {
        let data = Self.bytes()
        let nginx = try await RangeNginx.start { try data.write(to: URL(fileURLWithPath: $0 + "/video.bin")) }
        defer { nginx.stop() }
        let dir = TempDirectory()
        defer { dir.remove() }
        let config = TempDirectory()
        defer { config.remove() }
        try Data("""
            segments = 8
            output-dir = "\(config.path)/downloads"
            json = true
            on-complete = "/bin/true"
            """.utf8).write(to: URL(fileURLWithPath: config.file("config.toml")))
        let shell = try await Self.shell(#""$0" --config "$2" -O - "$1" | sha256sum; echo "exit ${PIPESTATUS[0]}""#,
                                         nginx.url("video.bin"), config.file("config.toml"), in: dir.path)
        let expected = try FileDigest.hex(of: nginx.root + "/video.bin", algorithm: .sha256)
        #expect(shell.stdout == "\(expected)  -\nexit 0\n", "\(shell)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: config.path + "/downloads"))
    }

    /// A reader that stops early (`| head -c`) ends haul quietly with exit 3, as curl's 23 (a failed write).
    @Test func aBrokenPipeEndsQuietly() async throws {
        let data = Self.bytes()
        let nginx = try await RangeNginx.start { try data.write(to: URL(fileURLWithPath: $0 + "/video.bin")) }
        defer { nginx.stop() }
        let dir = TempDirectory()
        defer { dir.remove() }
        let shell = try await Self.shell(#""$0" -q -O - "$1" | head -c 1000 | wc -c; echo "exit ${PIPESTATUS[0]}""#,
                                         nginx.url("video.bin"), in: dir.path)
        #expect(shell.stdout == "1000\nexit 3\n", "\(shell)")
        #expect(shell.stderr.isEmpty, "\(shell)")
    }

    /// What `-O -` cannot go with is refused before anything starts, in one line, with exit 2.
    @Test(arguments: [
        (["-O", "-", "http://127.0.0.1:9/a", "http://127.0.0.1:9/b"], "takes a single URL"),
        (["-O", "-", "-s", "4", "http://127.0.0.1:9/a"], "one connection"),
        (["-O", "-", "-i", "list.txt"], "takes a single URL"),
        (["-O", "-", "--json", "http://127.0.0.1:9/a"], "--json"),
        (["-O", "-", "-o", "out", "http://127.0.0.1:9/a"], "writes no file"),
    ])
    func standardOutputRefusals(arguments: [String], words: String) async throws {
        let dir = TempDirectory()
        defer { dir.remove() }
        try Data("http://127.0.0.1:9/a\n".utf8).write(to: URL(fileURLWithPath: dir.file("list.txt")))
        let run = try await HaulProcess.run(arguments, in: dir.path)
        #expect(run.status == 2, "\(run)")
        #expect(run.stdout.isEmpty, "\(run)")
        #expect(run.stderr.split(separator: "\n").count == 1 && run.stderr.contains("-O - (standard output) " )
                && run.stderr.contains(words), "\(run)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["list.txt"])
    }

    /// The queue has no standard output to write to: `haul add -O -` is refused before the service is asked.
    @Test func addRefusesStandardOutput() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        defer { dir.remove() }
        let run = try await SessionTests.haul(["add", "-O", "-", "http://127.0.0.1:9/a"], home, in: dir)
        #expect(run.status == 2, "\(run)")
        #expect(run.stderr.split(separator: "\n").count == 1 && run.stderr.contains("-O -"), "\(run)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    }

    /// `bash -c SCRIPT haul URL MORE...` in `directory`: its stdout and stderr.
    static func shell(_ script: String, _ url: String, _ more: String..., in directory: String) async throws
        -> (stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", script, HaulProcess.binary, url] + more
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CONFIG_HOME"] = "/nonexistent/haul-tests"
        process.environment = environment
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read both to the end on threads of their own (a full pipe would stall the shell), then wait.
        async let stdout = Self.readAll(out.fileHandleForReading)
        async let stderr = Self.readAll(err.fileHandleForReading)
        let result = await (stdout: stdout, stderr: stderr)
        process.waitUntilExit()
        return result
    }

    static func readAll(_ handle: FileHandle) async -> String {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: String(decoding: handle.readDataToEndOfFile(), as: UTF8.self))
            }
        }
    }
}

/// nginx from Debian in the foreground on a free loopback port, over plain HTTP, at 2 MiB/s a connection (so
/// that -s 4 keeps its four connections: its race keeps one only where one is not the limit), logging when
/// each request began and the range it asked.
final class RangeNginx: Sendable {
    struct Request: Sendable, CustomStringConvertible {
        /// Seconds (the epoch's) when the request began: nginx logs as a request ends, with how long it took.
        let started: Double
        let status: Int
        let first: Int64
        let last: Int64
        var description: String { "\(String(format: "%.3f", started)) \(status) \(first)-\(last)" }
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

    static func start(fill: (String) throws -> Void) async throws -> RangeNginx {
        let dir = NSTemporaryDirectory() + "nginx-range-\(UUID().uuidString)"
        let root = dir + "/www"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try fill(root)
        let port = try freeLoopbackPort()
        let user = geteuid() == 0 ? "user root root;" : ""
        let config = dir + "/nginx.conf"
        try Data("""
            \(user)
            worker_processes 1;
            daemon off;
            pid \(dir)/nginx.pid;
            error_log \(dir)/error.log warn;
            events { worker_connections 256; }
            http {
              log_format haul '$msec $request_time $status "$http_range"';
              access_log \(dir)/access.log haul;
              client_body_temp_path \(dir); proxy_temp_path \(dir); fastcgi_temp_path \(dir);
              uwsgi_temp_path \(dir); scgi_temp_path \(dir);
              server { listen 127.0.0.1:\(port); root \(root); limit_rate 2m; }
            }

            """.utf8).write(to: URL(fileURLWithPath: config))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-p", dir, "-e", dir + "/error.log", "-c", config]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let nginx = RangeNginx(port: port, root: root, dir: dir, process: process)
        try await waitForFiles(in: dir, "nginx to listen", within: .seconds(30)) {
            FileManager.default.fileExists(atPath: dir + "/nginx.pid") || !process.isRunning
        }
        try #require(process.isRunning, "nginx did not start: \((try? String(contentsOfFile: dir + "/error.log", encoding: .utf8)) ?? "")")
        return nginx
    }

    func url(_ name: String) -> String { "http://127.0.0.1:\(port)/\(name)" }

    /// Every ranged request logged so far, in the order they began.
    func requests() -> [Request] {
        let text = (try? String(contentsOfFile: dir + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line -> Request? in
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count == 4, let end = Double(fields[0]), let took = Double(fields[1]),
                let status = Int(fields[2])
            else { return nil }
            let range = fields[3].trimmingCharacters(in: CharacterSet(charactersIn: "\"")).dropFirst("bytes=".count)
            let bounds = range.split(separator: "-", omittingEmptySubsequences: false)
            guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]) else { return nil }
            return Request(started: end - took, status: status, first: first, last: last)
        }.sorted { $0.started < $1.started }
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
