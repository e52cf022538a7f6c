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
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
            bind(fd, socketAddress, length) == 0 && getsockname(fd, socketAddress, &length) == 0
        }
    }
    guard bound else { throw POSIXError(.EADDRINUSE) }
    return Int(UInt16(bigEndian: address.sin_port))
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
        let stream = self.stream
        let limit = Double(TestEnvironment.bound(.seconds(seconds)).components.seconds)
        let found = try await within(limit, what) {
            for await line in stream where condition(line) { return true }
            return false
        }
        try #require(found, "waited for \(what), but the output ended: \(lines.suffix(10))")
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
