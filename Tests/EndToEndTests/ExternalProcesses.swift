import Foundation
import Testing
import TestSupport

/// What the tests that start other programs (tinyproxy, aria2c) share.

/// A loopback port free now (bound to port 0, read back, released), for a server that cannot report the
/// port it took.
func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EMFILE) }
    defer { close(fd) }
    guard let port = bindToLoopback(fd) else { throw POSIXError(.EADDRINUSE) }
    return port
}

/// The lines a pipe brings, read on a thread of their own: kept for `lines`, and streamed to `waitFor`.
final class LineCollector: Sendable {
    private let seen = LockedLines()
    private let stream: AsyncStream<String>

    init(_ handle: FileHandle) {
        let (stream, sink) = AsyncStream.makeStream(of: String.self)
        self.stream = stream
        let seen = self.seen
        Thread.detachNewThread {
            var buffer = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: buffer[..<newline], as: UTF8.self)
                    seen.append(line)
                    sink.yield(line)
                    buffer.removeSubrange(...newline)
                }
            }
            sink.finish()
        }
    }

    var lines: [String] { seen.snapshot }

    /// Returns once a line satisfies `condition` (one waiter: the lines stream once).
    func waitFor(_ what: String, within seconds: Double = 10, _ condition: @escaping @Sendable (String) -> Bool) async throws {
        let found = try await first(what, within: seconds, condition)
        try #require(found != nil, "waited for \(what), but the output ended: \(lines.suffix(10))")
    }

    /// The first line that satisfies `condition`, or nil when the output ends first (one waiter).
    func first(_ what: String, within seconds: Double = 10, _ condition: @escaping @Sendable (String) -> Bool)
        async throws -> String?
    {
        let stream = self.stream
        return try await within(seconds, what) {
            for await line in stream where condition(line) { return line }
            return nil
        }
    }
}

/// Lines under a lock (a request log, a program's output).
final class LockedLines: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var lines: [String] = []

    var snapshot: [String] { lock.withLock { lines } }

    func append(_ line: String) {
        lock.withLock { lines.append(line) }
    }
}

/// Files under a directory whose bytes contain a string (a password that must be nowhere).
enum TestFiles {
    static func containing(_ needle: String, under root: String) throws -> [String] {
        let bytes = Array(needle.utf8)
        var found: [String] = []
        guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
        for case let relative as String in walker {
            let path = root + "/" + relative
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                let data = FileManager.default.contents(atPath: path) else { continue }
            if Array(data).firstRange(of: bytes) != nil { found.append(path) }
        }
        return found
    }
}

/// Waits until `condition` holds, checking it again each time a file in `directory` is created, written,
/// closed or renamed into it (inotify): files another process writes give no other sign. On a thread of its
/// own, asleep in poll(2) between events.
func waitForFiles(in directory: String, _ what: String, within bound: Duration,
                  until condition: @escaping @Sendable () -> Bool) async throws {
    let limit = TestEnvironment.bound(bound)
    let met = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        Thread.detachNewThread {
            let fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
            defer { if fd >= 0 { close(fd) } }
            let events = UInt32(IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO)
            guard fd >= 0, inotify_add_watch(fd, directory, events) >= 0 else {
                continuation.resume(returning: condition())
                return
            }
            let deadline = ContinuousClock.now + limit
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while !condition() {
                let left = ContinuousClock.now.duration(to: deadline)
                guard left > .zero else {
                    continuation.resume(returning: false)
                    return
                }
                var watch = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                _ = poll(&watch, 1, Int32(min(left.components.seconds * 1000 + 1, 60_000)))
                while read(fd, &buffer, buffer.count) > 0 {}  // the events only say: look again
            }
            continuation.resume(returning: true)
        }
    }
    if !met { throw WaitTimedOut(what: what) }
}

struct WaitTimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}
