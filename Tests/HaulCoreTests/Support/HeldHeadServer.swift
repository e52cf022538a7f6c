import Dispatch
import Foundation
import Glibc
import NIOConcurrencyHelpers
import TestSupport

/// A keep-alive HTTP/1.1 server on 127.0.0.1 that counts the connections it accepts and holds every answer
/// to HEAD until `releaseHeads()`: what a slow HEAD looks like to a client that opens connections ahead.
/// GETs with a `Range` get those bytes of a file of `size` bytes (byte i is i mod 251); others get it whole.
/// Every request head it read is kept (`requests`).
final class HeldHeadServer: Sendable {
    let port: Int
    let size: Int
    /// The file, made once: built byte by byte per answer, 1 MiB took over a second under TSan, and three
    /// answers at once 20 s, long enough for the client to call the connection stalled.
    private let body: [UInt8]
    private let listener: Int32
    private let state = NIOLockedValueBox((accepted: 0, open: [Int32](), requests: [String](), connections: [Int]()))
    /// Every answer to HEAD waits here until `releaseHeads()`.
    private let headsHeld = Hold()
    /// With `holdingBodiesAfter`: every ranged GET sends this many bytes of its body, then waits in `bodiesHeld`
    /// until `releaseBodies()` (every connection still receiving, none done and free to take another's work).
    private let bodyHold: Int?
    private let bodiesHeld = Hold()
    /// The first line of each GET that arrived.
    private let getsArriving: AsyncStream<String>
    private let getArrived: AsyncStream<String>.Continuation
    /// One element per HEAD that arrived.
    private let headsArriving: AsyncStream<Void>
    private let headArrived: AsyncStream<Void>.Continuation

    init(size: Int, holdingBodiesAfter bodyHold: Int? = nil) throws {
        self.size = size
        self.bodyHold = bodyHold
        (getsArriving, getArrived) = AsyncStream.makeStream(of: String.self)
        let cycle = (0..<251).map { UInt8($0) }
        var body: [UInt8] = []
        body.reserveCapacity(size)
        while body.count < size { body += cycle.prefix(size - body.count) }
        self.body = body
        (headsArriving, headArrived) = AsyncStream.makeStream(of: Void.self)
        let (fd, port) = try loopbackListener()
        listener = fd
        self.port = port
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { break }
                let connection = state.withLockedValue { state in
                    state.accepted += 1
                    state.open.append(client)
                    return state.accepted
                }
                Thread.detachNewThread { [self] in serve(client, connection: connection) }
            }
            close(fd)  // here, not in `stop`: a descriptor is closed by the thread that uses it
        }
    }

    var url: String { "http://127.0.0.1:\(port)/file.bin" }
    var accepted: Int { state.withLockedValue { $0.accepted } }
    /// The request heads read so far, each up to its blank line, in the order they came.
    var requests: [String] { state.withLockedValue { $0.requests } }
    /// The connection each of `requests` came on: 1 for the first accepted, and so on.
    var requestConnections: [Int] { state.withLockedValue { $0.connections } }

    /// Returns once `count` HEAD requests have arrived (false if they did not within `seconds`), without
    /// holding a thread of the cooperative pool meanwhile.
    func waitForHeads(_ count: Int, within seconds: Double = 20) async -> Bool {
        let arriving = headsArriving
        return (try? await within(seconds, "\(count) HEAD requests") {
            var seen = 0
            for await _ in arriving {
                seen += 1
                if seen == count { return true }
            }
            return false
        }) ?? false
    }

    /// Returns the first lines of the first `count` GETs once they have arrived (nil if they did not within
    /// `seconds`). One caller: the GETs are taken from one stream.
    func waitForGets(_ count: Int, within seconds: Double = 20) async -> [String]? {
        let arriving = getsArriving
        return try? await within(seconds, "\(count) GET requests") {
            var seen: [String] = []
            for await line in arriving {
                seen.append(line)
                if seen.count == count { break }
            }
            return seen
        }
    }

    /// Lets every held answer (`holdingBodiesAfter`) send the rest of its body, and the later ones send theirs
    /// whole.
    func releaseBodies() { bodiesHeld.open() }

    func releaseHeads() { headsHeld.open() }

    /// Ends the accept loop and every connection (each thread closes its own descriptor).
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        // Under the lock: a connection's thread takes its descriptor out of `open` before closing it.
        state.withLockedValue { state in
            for fd in state.open { shutdown(fd, Int32(SHUT_RDWR)) }
        }
        releaseHeads()
        releaseBodies()
    }

    private func serve(_ fd: Int32, connection: Int) {
        defer {
            state.withLockedValue { $0.open.removeAll { $0 == fd } }
            close(fd)
        }
        var heads = RequestHeads(fd)
        while let head = heads.next() {
            state.withLockedValue { state in
                state.requests.append(head)
                state.connections.append(connection)
            }
            let lines = head.split(separator: "\r\n")
            if lines.first?.hasPrefix("HEAD ") == true {
                headArrived.yield()
                headsHeld.pass()
                guard send(fd, "HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\nAccept-Ranges: bytes\r\n\r\n") else { return }
                continue
            }
            var first = 0
            var last = size - 1
            var status = "200 OK"
            if let range = lines.first(where: { $0.lowercased().hasPrefix("range: bytes=") }) {
                let spec = range.split(separator: "=")[1].split(separator: "-", omittingEmptySubsequences: false)
                first = Int(spec[0]) ?? 0
                last = min(size - 1, Int(spec[1]) ?? size - 1)
                status = "206 Partial Content"
            }
            if let line = lines.first { getArrived.yield(String(line)) }
            var answer = Array("HTTP/1.1 \(status)\r\nContent-Length: \(last - first + 1)\r\nAccept-Ranges: bytes\r\n".utf8)
            if status.hasPrefix("206") { answer += Array("Content-Range: bytes \(first)-\(last)/\(size)\r\n".utf8) }
            answer += Array("\r\n".utf8)
            guard send(fd, answer[...]) else { return }
            var from = first
            if let hold = bodyHold, status.hasPrefix("206"), !bodiesHeld.isOpen {
                from = Swift.min(first + hold, last + 1)
                guard send(fd, body[first..<from]) else { return }
                bodiesHeld.pass()
            }
            guard from > last || send(fd, body[from...last]) else { return }
        }
    }

    private func send(_ fd: Int32, _ text: String) -> Bool { send(fd, Array(text.utf8)[...]) }

    private func send(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var sent = 0
            while sent < buffer.count {
                let n = write(fd, buffer.baseAddress! + sent, buffer.count - sent)
                guard n > 0 else { return false }
                sent += n
            }
            return true
        }
    }
}

/// Where the server's threads wait until the test lets them go: `pass()` returns at once when open, else once
/// `open()` is called; opened, it stays open.
private final class Hold: Sendable {
    private let state = NIOLockedValueBox((waiting: 0, open: false))
    private let opened = DispatchSemaphore(value: 0)

    var isOpen: Bool { state.withLockedValue { $0.open } }

    func pass() {
        let wait = state.withLockedValue { state -> Bool in
            if !state.open { state.waiting += 1 }
            return !state.open
        }
        if wait { opened.wait() }
    }

    func open() {
        let waiting = state.withLockedValue { state -> Int in
            defer { state.open = true; state.waiting = 0 }
            return state.open ? 0 : state.waiting
        }
        for _ in 0..<waiting { opened.signal() }
    }
}
