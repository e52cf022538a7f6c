import Dispatch
import Foundation
import Glibc
import NIOConcurrencyHelpers
import TestSupport
import Testing
@testable import HaulCore

/// The curl thread keeps the easy handles of ended transfers for the next ones (reset to curl's defaults):
/// nothing one transfer asked for may reach the server in the next one's request.
@Suite struct ReusedHandleTests {
    @Test func aTransferOnAKeptHandleSendsNothingOfTheOneBefore() async throws {
        let server = try HeadRecordingServer()
        defer { server.stop() }
        let events = TransferEvents()
        let driver = events.driver()

        var first = HTTPRequest(url: server.url)
        first.headers = ["X-Secret: 1"]
        first.range = (first: 1, last: 3)
        first.ifRange = "\"v1\""
        first.options.user = "ann"
        first.options.password = "s3cret"
        first.options.userAgent = "first-agent"
        for request in [first, HTTPRequest(url: server.url)] {
            let transfer = driver.start(request)
            #expect(try await transfer.head().status == 200)
            for try await _ in transfer.bytes {}
            await events.waitUntilClosed(transfer)
        }
        await driver.shutdown()

        let heads = server.heads
        try #require(heads.count == 2, "\(heads)")
        let before = heads[0].lowercased()
        #expect(before.contains("x-secret: 1") && before.contains("authorization: basic") && before.contains("range: bytes=1-3")
                && before.contains("if-range") && before.contains("first-agent"), "\(heads[0])")
        let after = heads[1].lowercased()
        for leftover in ["x-secret", "authorization", "range:", "if-range", "first-agent"] {
            #expect(!after.contains(leftover), "\(leftover) in \(heads[1])")
        }
        #expect(after.contains("user-agent: haul/"), "\(heads[1])")
    }
}

/// A keep-alive HTTP/1.1 server on 127.0.0.1 that keeps every request head it reads and answers each with
/// five bytes.
private final class HeadRecordingServer: Sendable {
    let port: Int
    private let listener: Int32
    private let state = NIOLockedValueBox((heads: [String](), open: [Int32]()))

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        guard let port = bindToLoopback(fd, listening: 16) else {
            close(fd)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        listener = fd
        self.port = port
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { break }
                state.withLockedValue { $0.open.append(client) }
                Thread.detachNewThread { [self] in serve(client) }
            }
            close(fd)
        }
    }

    var url: String { "http://127.0.0.1:\(port)/file.bin" }
    var heads: [String] { state.withLockedValue { $0.heads } }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        state.withLockedValue { state in
            for fd in state.open { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    private func serve(_ fd: Int32) {
        defer {
            state.withLockedValue { $0.open.removeAll { $0 == fd } }
            close(fd)
        }
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            var found = pending.headEnd
            while found == nil {
                let n = read(fd, &buffer, buffer.count)
                guard n > 0 else { return }
                pending += buffer[0..<n]
                found = pending.headEnd
            }
            let end = found!
            let head = String(decoding: pending[..<end], as: UTF8.self)
            pending.removeFirst(end + 4)
            state.withLockedValue { $0.heads.append(head) }
            let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".utf8)
            let sent = answer.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent == answer.count else { return }
        }
    }
}
