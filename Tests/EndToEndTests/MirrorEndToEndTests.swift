import Foundation
import NIOConcurrencyHelpers
import Testing
import TestSupport
@testable import HaulCore

/// One file from several sources served by Debian's nginx on loopback (plain HTTP, a server block per source):
/// one fast, one slow (`limit_rate`), one that fails mid-way (its nginx is killed while it sends), one that
/// serves other bytes of the same size. The engine is driven in process: the faces that take mirrors are
/// another part's.
@Suite(.serialized) struct MirrorEndToEndTests {
    static let size = 24 << 20

    /// The file the good sources serve, and a twin of the same size with other bytes.
    static func bytes(seed: UInt8) -> Data {
        var data = Data(count: size)
        data.withUnsafeMutableBytes { raw in
            var state = UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 | 1
            for index in 0..<raw.count {
                state ^= state << 13; state ^= state >> 7; state ^= state << 17
                raw[index] = UInt8(truncatingIfNeeded: state)
            }
        }
        return data
    }

    /// Runs `job`: its outcome, its facts, the last source statuses; `onProgress` sees the completed bytes.
    static func run(_ job: DownloadJob, onProgress: @escaping (Int64) -> Void = { _ in })
        async -> (Result<DownloadResult, HaulError>, [DownloadFact], [SourceStatus])
    {
        var facts: [DownloadFact] = []
        var statuses: [SourceStatus] = []
        var downloader = Downloader()
        downloader.retryPolicy.base = .milliseconds(10)
        do {
            let result = try await downloader.download(job) { event in
                switch event {
                case .fact(let fact): facts.append(fact)
                case .sources(let now): statuses = now
                case .progress(let progress): onProgress(progress.completed)
                case .started: break
                }
            }
            return (.success(result), facts, statuses)
        } catch {
            return (.failure(error), facts, statuses)
        }
    }

    static func job(_ urls: [String], into dir: TempDirectory, segments: Int, retries: Int) -> DownloadJob {
        var job = DownloadJob(sources: urls.map { DownloadSource(url: $0) }, outputDirectory: dir.path,
                              outputName: "file.bin")
        job.segments = segments
        job.retries = retries
        job.transfer.stallTimeout = 5
        return job
    }

    @Test func fourMirrorsFastSlowFailingAndOtherEndIdentical() async throws {
        let good = Self.bytes(seed: 1)
        let nginx = try await MirrorNginx.start(blocks: ["limit_rate 2m;", "limit_rate 256k;", "root OTHER; limit_rate 2m;"]) { root, other in
            try good.write(to: URL(fileURLWithPath: root + "/file.bin"))
            try Self.bytes(seed: 2).write(to: URL(fileURLWithPath: other + "/file.bin"))
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -86_400)],
                                                  ofItemAtPath: other + "/file.bin")
        }
        defer { nginx.stop() }
        // The source that fails mid-way: an nginx of its own, killed once the download is a quarter in.
        let failing = try await MirrorNginx.start(blocks: ["limit_rate 1m;"]) { root, _ in
            try good.write(to: URL(fileURLWithPath: root + "/file.bin"))
        }
        defer { failing.stop() }
        let dir = TempDirectory()
        let urls = [nginx.url(0, "file.bin"), nginx.url(1, "file.bin"), failing.url(0, "file.bin"), nginx.url(2, "file.bin")]
        let killed = NIOLockedValueBox(false)
        let (result, facts, statuses) = await Self.run(Self.job(urls, into: dir, segments: 4, retries: 2)) { completed in
            guard completed >= Int64(Self.size / 4), !killed.withLockedValue({ $0 }) else { return }
            killed.withLockedValue { $0 = true }
            failing.kill()
        }
        #expect(throws: Never.self) { try result.get() }
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("file.bin"))) == good)
        #expect(statuses.map(\.state).count == 4, "\(statuses)")
        try #require(statuses.count == urls.count, "\(statuses)")
        #expect(statuses[3].state == .dropped, "\(statuses)")
        #expect(facts.contains { if case .sourceDropped(urls[3], .otherBytes) = $0 { true } else { false } }, "\(facts)")
        #expect(killed.withLockedValue { $0 })
        #expect(statuses[2].state == .failed, "\(statuses)")
        #expect(facts.contains { if case .sourceFailed(urls[2], _) = $0 { true } else { false } }, "\(facts)")
        #expect(statuses[0].state != .failed && statuses[0].bytes > 0, "\(statuses)")
        #expect(statuses[1].state != .failed && statuses[1].state != .dropped, "\(statuses)")
    }

    @Test func everySourceFailingFailsWithOneClearLine() async throws {
        let nginx = try await MirrorNginx.start(blocks: ["return 503;", "return 503;"]) { _, _ in }
        defer { nginx.stop() }
        let dir = TempDirectory()
        let urls = [nginx.url(0, "file.bin"), nginx.url(1, "file.bin")]
        let (result, facts, statuses) = await Self.run(Self.job(urls, into: dir, segments: 2, retries: 1))
        guard case .failure(let error) = result else {
            Issue.record("the download succeeded")
            return
        }
        #expect(error.category == .server && error.httpStatus == 503, "\(error)")
        #expect(!error.message.contains("\n") && error.message.contains("503"), "\(error.message)")
        #expect(facts.filter { $0.kind == "source-failed" }.count == 4, "each source in each of two attempts: \(facts)")
        #expect(statuses.allSatisfy { $0.state == .failed }, "\(statuses)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("file.bin")))
    }

    @Test func overOneConnectionTheNextSourceContinuesFromTheBytesOnDisk() async throws {
        let good = Self.bytes(seed: 1)
        let first = try await MirrorNginx.start(blocks: ["limit_rate 4m;"]) { root, _ in
            try good.write(to: URL(fileURLWithPath: root + "/file.bin"))
        }
        defer { first.stop() }
        let second = try await MirrorNginx.start(blocks: [""]) { root, _ in
            try good.write(to: URL(fileURLWithPath: root + "/file.bin"))
            // Another ETag and Last-Modified than the first source's, as two mirrors' are.
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -86_400)],
                                                  ofItemAtPath: root + "/file.bin")
        }
        defer { second.stop() }
        let dir = TempDirectory()
        let urls = [first.url(0, "file.bin"), second.url(0, "file.bin")]
        let killedAt = NIOLockedValueBox<Int64?>(nil)
        let (result, facts, _) = await Self.run(Self.job(urls, into: dir, segments: 1, retries: 0)) { completed in
            guard completed >= 3 << 20, killedAt.withLockedValue({ $0 }) == nil else { return }
            killedAt.withLockedValue { $0 = completed }
            first.kill()
        }
        #expect(throws: Never.self) { try result.get() }
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("file.bin"))) == good)
        #expect(facts.contains { $0.kind == "source-failed" }, "\(facts)")
        #expect(!facts.contains { $0.kind == "resume-refused" || $0.kind == "retrying" }, "\(facts)")
        // The second source was asked only for ranges: the check before the offset, then the rest.
        let asked = second.requests()
        #expect(!asked.isEmpty && asked.allSatisfy { $0.status == 206 && $0.range.hasPrefix("bytes=") }, "\(asked)")
        let starts = asked.compactMap { Int64($0.range.dropFirst(6).prefix { $0 != "-" }) }
        #expect(starts.allSatisfy { $0 >= (killedAt.withLockedValue { $0 } ?? 0) - (64 << 10) }, "\(asked)")
    }
}

/// nginx from Debian serving plain HTTP on loopback: one server block (a port of its own) per entry of
/// `blocks`, each with the directives given; `ROOT` is the shared root, `OTHER` a second one.
final class MirrorNginx: Sendable {
    struct Request: Sendable, CustomStringConvertible {
        let status: Int
        let range: String
        var description: String { "\(status) \(range)" }
    }

    let ports: [Int]
    private let dir: String
    private let process: Process

    private init(ports: [Int], dir: String, process: Process) {
        self.ports = ports
        self.dir = dir
        self.process = process
    }

    static func start(blocks: [String], fill: (String, String) throws -> Void) async throws -> MirrorNginx {
        let dir = NSTemporaryDirectory() + "nginx-mirror-\(UUID().uuidString)"
        let root = dir + "/www"
        let other = dir + "/other"
        for folder in [root, other] { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
        try fill(root, other)
        let ports = try blocks.map { _ in try freeLoopbackPort() }
        let servers = zip(ports, blocks).map { port, block -> String in
            let own = block.contains("root ") ? "" : "root \(root);"
            return "server { listen 127.0.0.1:\(port); \(own) \(block.replacingOccurrences(of: "OTHER", with: other)) }"
        }.joined(separator: "\n")
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
              log_format haul '$status "$http_range"';
              access_log \(dir)/access.log haul;
              client_body_temp_path \(dir); proxy_temp_path \(dir); fastcgi_temp_path \(dir);
              uwsgi_temp_path \(dir); scgi_temp_path \(dir);
              \(servers)
            }

            """.utf8).write(to: URL(fileURLWithPath: config))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-p", dir, "-e", dir + "/error.log", "-c", config]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let nginx = MirrorNginx(ports: ports, dir: dir, process: process)
        try await waitForFiles(in: dir, "nginx to listen", within: .seconds(30)) {
            FileManager.default.fileExists(atPath: dir + "/nginx.pid") || !process.isRunning
        }
        try #require(process.isRunning, "nginx did not start: \((try? String(contentsOfFile: dir + "/error.log", encoding: .utf8)) ?? "")")
        return nginx
    }

    func url(_ block: Int, _ name: String) -> String { "http://127.0.0.1:\(ports[block])/\(name)" }

    /// Every request logged so far: its status and Range header.
    func requests() -> [Request] {
        let text = (try? String(contentsOfFile: dir + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", maxSplits: 1).map(String.init)
            guard fields.count == 2, let status = Int(fields[0]) else { return nil }
            return Request(status: status, range: fields[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
        }
    }

    /// Ends nginx at once, its connections reset mid-body (the master and its worker).
    func kill() {
        guard process.isRunning else { return }
        let pid = process.processIdentifier
        // The master first (killed alone, a worker would be started again), then its worker, read before.
        let workers = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        Glibc.kill(pid, SIGKILL)
        for child in workers.split(separator: " ").compactMap({ Int32($0) }) { Glibc.kill(child, SIGKILL) }
        process.waitUntilExit()
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: dir)
    }

    deinit {
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
    }
}
