import CLinux
import Foundation
import HaulTorrent
import Testing
import TestSupport

/// A BitTorrent swarm on 127.0.0.1 made of programs no one here wrote: opentracker (Debian's, built to serve
/// only the info-hashes of its whitelist) and aria2c seeders; transmission-create makes the .torrent files.
final class Swarm: Sendable {
    let directory: TempDirectory
    let trackerPort: Int
    private let processes: NIOLockedProcesses

    var announce: String { "http://127.0.0.1:\(trackerPort)/announce" }
    var whitelist: String { directory.file("whitelist") }

    init() throws {
        directory = TempDirectory()
        // opentracker drops to `nobody` before it reads its whitelist: the folder must be open to it.
        chmod(directory.path, 0o755)
        trackerPort = try freeLoopbackPort()
        processes = NIOLockedProcesses()
    }

    deinit { stop() }

    /// Ends the tracker and the seeders (SIGKILL: nothing of theirs is kept) and removes the folder.
    func stop() {
        processes.stopAll()
        directory.remove()
    }

    /// Starts the tracker serving `hashes` (v1, hex); returns once it has read them (its sockets are bound
    /// before it does: inotify sees it open the whitelist).
    func startTracker(serving hashes: [String]) async throws {
        try (hashes.joined(separator: "\n") + "\n").write(toFile: whitelist, atomically: false, encoding: .utf8)
        chmod(whitelist, 0o644)
        let path = whitelist
        let port = trackerPort
        let tracker = try await waitForOpen(of: path) {
            try ServerProcess(["/usr/bin/opentracker", "-i", "127.0.0.1", "-p", "\(port)", "-P", "\(port)", "-w", path])
        }
        processes.add(tracker)
    }

    /// Starts aria2c seeding `torrent` from `folder` (checked first: `-V`), on a free port, nothing but loopback.
    @discardableResult
    func seed(_ torrent: String, from folder: String, uploadLimit: String? = nil) throws -> ServerProcess {
        let port = try freeLoopbackPort()
        var argv = ["/usr/bin/aria2c", "--dir=\(folder)", "--seed-ratio=0.0", "--bt-enable-lpd=false",
                    "--enable-dht=false", "--enable-dht6=false", "--enable-peer-exchange=false", "-V",
                    "--listen-port=\(port)", "--disable-ipv6=true", "--summary-interval=0", "--quiet=true",
                    "--bt-seed-unverified=false", "--check-certificate=false"]
        if let uploadLimit { argv.append("--max-upload-limit=\(uploadLimit)") }
        argv.append(torrent)
        let seeder = try ServerProcess(argv)
        processes.add(seeder)
        return seeder
    }

    /// Starts transmission-cli seeding `torrent` from `folder` (checked first: `-v`), on a free port, with DHT,
    /// PEX, local discovery and port mapping off, bound to 127.0.0.1 (its settings in a folder of its own).
    @discardableResult
    func seedWithTransmission(_ torrent: String, from folder: String) throws -> ServerProcess {
        let port = try freeLoopbackPort()
        let config = directory.file("transmission-\(port)")
        try FileManager.default.createDirectory(atPath: config, withIntermediateDirectories: true)
        let settings = #"{"dht-enabled": false, "lpd-enabled": false, "pex-enabled": false, "port-forwarding-enabled": false, "#
            + #""bind-address-ipv4": "127.0.0.1", "bind-address-ipv6": "::1", "rpc-enabled": false, "utp-enabled": false, "#
            + #""ratio-limit-enabled": false, "encryption": 0, "message-level": 0}"#
        try settings.write(toFile: config + "/settings.json", atomically: false, encoding: .utf8)
        let seeder = try ServerProcess(["/usr/bin/transmission-cli", "-g", config, "-w", folder, "-p", "\(port)", "-M", "-v",
                                        "-ep", torrent])
        processes.add(seeder)
        return seeder
    }

    /// Runs aria2c as a leecher of `torrent` into `folder` until it has every file (no seeding after).
    func leech(_ torrent: String, into folder: String) async throws -> Int32 {
        let port = try freeLoopbackPort()
        return try await runTool(["/usr/bin/aria2c", "--dir=\(folder)", "--seed-time=0", "--bt-enable-lpd=false",
                                  "--enable-dht=false", "--enable-dht6=false", "--enable-peer-exchange=false",
                                  "--listen-port=\(port)", "--disable-ipv6=true", "--summary-interval=0", "--quiet=true",
                                  "--bt-stop-timeout=\(Int(TestEnvironment.bound(.seconds(60)).components.seconds))", torrent])
    }

    /// Returns once the tracker counts `count` seeders of the torrent `hash` (v1, hex), at most 20 s (scaled).
    /// A seeder announces only after it has checked its files, and a leecher that announced before that hears
    /// of no seeder until its next announce, half an hour later (opentracker's interval). opentracker tells
    /// no one when a peer announces: its scrape is asked every 50 ms.
    func waitForSeeders(_ hash: String, count: Int = 1) async throws {
        let bytes = stride(from: 0, to: hash.count, by: 2).map { offset -> String in
            let start = hash.index(hash.startIndex, offsetBy: offset)
            return "%" + hash[start..<hash.index(start, offsetBy: 2)]
        }.joined()
        let url = "http://127.0.0.1:\(trackerPort)/scrape?info_hash=\(bytes)"
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: TestEnvironment.bound(.seconds(20)))
        while clock.now < deadline {
            let answer = try await toolOutput(["/usr/bin/curl", "-s", url])
            if let range = answer.range(of: #"8:completei([0-9]+)e"#, options: .regularExpression),
               let seeders = Int(answer[range].dropFirst(11).dropLast()), seeders >= count { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("the tracker never counted \(count) seeder(s) of \(hash)")
    }

    /// A .torrent of `path` (a file or a folder) with this swarm's tracker, by transmission-create.
    func makeTorrent(of path: String, named name: String, pieceKiB: Int = 32) async throws -> String {
        let output = directory.file(name)
        let status = try await runTool(["/usr/bin/transmission-create", "-o", output, "-t", announce, "-s", "\(pieceKiB)", path])
        try #require(status == 0, "transmission-create failed")
        return output
    }

    /// The v1 info-hash of a .torrent, as libtorrent reads it.
    static func infoHash(of torrent: String) throws -> String {
        let bytes = try #require(FileManager.default.contents(atPath: torrent))
        return try #require(try TorrentMetadata.parse(torrent: Array(bytes)).infoHashes.v1)
    }
}

/// The processes a swarm started, stopped with it.
final class NIOLockedProcesses: @unchecked Sendable {
    private let lock = NSLock()
    private var processes: [ServerProcess] = []

    func add(_ process: ServerProcess) { lock.withLock { processes.append(process) } }
    func stopAll() {
        lock.withLock {
            for process in processes where process.isRunning { kill(process.pid, SIGKILL) }
            processes = []
        }
    }
}

/// Runs a program to its end (posix_spawn, reaped by a thread of its own: Foundation's `Process` is not used
/// beside an in-process torrent session); its exit status, -1 when a signal ended it.
func runTool(_ argv: [String]) async throws -> Int32 {
    await (try ServerProcess(argv)).exitStatus()
}

/// Runs a program to its end; its standard output.
func toolOutput(_ argv: [String]) async throws -> String {
    var ends: [Int32] = [0, 0]
    guard haul_pipe_cloexec(&ends) == 0 else { throw POSIXError(.EMFILE) }
    let process: ServerProcess
    do {
        process = try ServerProcess(argv, output: ends[1])
    } catch {
        close(ends[0])
        close(ends[1])
        throw error
    }
    close(ends[1])
    let reader = ends[0]
    let data = await withCheckedContinuation { (continuation: CheckedContinuation<[UInt8], Never>) in
        Thread.detachNewThread {
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                bytes += buffer[..<n]
            }
            close(reader)
            continuation.resume(returning: bytes)
        }
    }
    _ = await process.exitStatus()
    return String(decoding: data, as: UTF8.self)
}

/// A loopback port free now (bound to port 0, read back, released), for a program that cannot report the
/// port it took.
func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EMFILE) }
    defer { close(fd) }
    guard let port = bindToLoopback(fd) else { throw POSIXError(.EADDRINUSE) }
    return port
}

/// Runs `start` and waits until something opens `path` (inotify's IN_OPEN), at most 20 s (scaled).
func waitForOpen<T>(of path: String, _ start: () throws -> T) async throws -> T {
    let fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
    try #require(fd >= 0)
    defer { close(fd) }
    try #require(inotify_add_watch(fd, path, UInt32(IN_OPEN)) >= 0)
    let started = try start()
    let limit = TestEnvironment.bound(.seconds(20))
    let opened = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        Thread.detachNewThread {
            var watch = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(limit.components.seconds * 1000)
            continuation.resume(returning: poll(&watch, 1, milliseconds) == 1)
        }
    }
    try #require(opened, "nothing opened \(path)")
    return started
}

/// Waits until a file is renamed into `directory` as `name` (inotify's IN_MOVED_TO), at most 20 s (scaled).
func waitForRename(into directory: String, named name: String) async throws {
    let fd = inotify_init1(Int32(IN_CLOEXEC))
    try #require(fd >= 0)
    defer { close(fd) }
    try #require(inotify_add_watch(fd, directory, UInt32(IN_MOVED_TO)) >= 0)
    let limit = TestEnvironment.bound(.seconds(20))
    let seen = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        Thread.detachNewThread {
            let clock = ContinuousClock()
            let deadline = clock.now.advanced(by: limit)
            var buffer = [UInt8](repeating: 0, count: 4096)
            while clock.now < deadline {
                let left = clock.now.duration(to: deadline)
                var watch = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&watch, 1, Int32(left.components.seconds * 1000 + 1)) == 1 else { break }
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                guard n > 0 else { break }
                var offset = 0
                while offset + MemoryLayout<inotify_event>.size <= n {
                    let length = buffer.withUnsafeBytes { Int($0.load(fromByteOffset: offset + 12, as: UInt32.self)) }
                    let start = offset + MemoryLayout<inotify_event>.size
                    let named = String(decoding: buffer[start..<min(start + length, n)].prefix { $0 != 0 }, as: UTF8.self)
                    if named == name {
                        continuation.resume(returning: true)
                        return
                    }
                    offset = start + length
                }
            }
            continuation.resume(returning: false)
        }
    }
    try #require(seen, "nothing was renamed to \(name) in \(directory)")
}

/// `count` bytes of a fixed pseudo-random sequence (so a byte off in a piece is seen).
func randomBytes(_ count: Int, seed: UInt64) -> Data {
    var generator = SplitMix64(seed: seed)
    return Data((0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
}

/// How long a test's torrent run may take (scaled by `TestEnvironment.bound`) before it is killed as a hang:
/// the swarm's files are a few MiB, on loopback.
let torrentLimit: Duration = .seconds(60)

/// What a loopback torrent run of haul needs on its command line: nothing that reaches past 127.0.0.1.
let loopbackOptions = ["--plain", "--interface", "127.0.0.1", "--bt-listen-port", "0", "--no-dht", "--no-pex",
                       "--no-lpd", "--no-port-mapping"]

/// `loopbackOptions` for a run that ends once its files are verified (`--seed-time 0`: no seeding).
let leechOptions = loopbackOptions + ["--seed-time", "0"]
