#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SampleServer
import TestSupport

/// What a raw HTTP/1.1 exchange produced, exactly as it arrived on the socket.
struct RawResponse: Sendable {
    let status: Int
    /// Header fields with lowercased names.
    let headers: [String: String]
    let body: [UInt8]
    /// Wall time from connecting until the server closed the connection.
    let elapsed: Duration

    subscript(_ name: String) -> String? {
        headers[name.lowercased()]
    }

    var contentLength: Int? {
        self["content-length"].flatMap { Int($0) }
    }
}

enum RawHTTPClientError: Error {
    case socket(String)
    case malformedResponse(String)
}

/// A minimal blocking HTTP/1.1 client over a POSIX socket: one request with `Connection: close`, read until the
/// server closes. Unlike a full client it reports short bodies as they are, which is what fault tests need.
///
/// The blocking work runs on its own thread so it never occupies the Swift concurrency pool the in-process server
/// needs.
enum RawHTTPClient {
    /// Sends `METHOD target` to the server and returns what came back before the connection closed.
    static func fetch(
        _ method: String = "GET", from server: SampleServer, _ target: String, headers: [String: String] = [:]
    ) async throws -> RawResponse {
        let port = server.port
        return try await onOwnThread {
            try exchange(method: method, port: port, target: target, headers: headers)
        }
    }

    private static func exchange(
        method: String, port: Int, target: String, headers: [String: String]
    ) throws -> RawResponse {
        let clock = ContinuousClock()
        let start = clock.now
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPClientError.socket("socket: \(errno)") }
        defer { close(fd) }
        // No tighter than the tests' own bounds, which stretch under a sanitizer (a run of the whole suite
        // under TSan was seen to keep the server's response tasks waiting for a thread for over 30 s).
        var timeout = timeval(tv_sec: Int(TestEnvironment.bound(.seconds(30)).components.seconds), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw RawHTTPClientError.socket("connect: \(errno)") }

        var request = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers {
            request += "\(name): \(value)\r\n"
        }
        request += "\r\n"
        let requestBytes = Array(request.utf8)
        var sent = 0
        while sent < requestBytes.count {
            let count = requestBytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw RawHTTPClientError.socket("send: \(errno)") }
            sent += count
        }

        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received.append(contentsOf: chunk[..<count])
            } else if count == 0 || errno == ECONNRESET {
                break
            } else if errno != EINTR {
                throw RawHTTPClientError.socket("recv: \(errno)")
            }
        }
        return try parse(received, elapsed: clock.now - start)
    }

    private static func parse(_ bytes: [UInt8], elapsed: Duration) throws -> RawResponse {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let headEnd = bytes.indices.dropLast(3).first(where: { bytes[$0..<$0 + 4].elementsEqual(separator) })
        else { throw RawHTTPClientError.malformedResponse("no end of head in \(bytes.count) bytes") }
        let head = String(decoding: bytes[..<headEnd], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw RawHTTPClientError.malformedResponse(head)
        }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                .trimmingCharacters(in: .whitespaces)
        }
        return RawResponse(status: status, headers: headers, body: Array(bytes[(headEnd + 4)...]), elapsed: elapsed)
    }
}

/// Runs blocking work on a dedicated thread and awaits its result.
func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
