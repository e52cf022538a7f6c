import Glibc

/// Reads the request heads a client sends on one connection, one at a time: the test servers' reader.
struct RequestHeads {
    let fd: Int32
    private var pending: [UInt8] = []
    private var buffer = [UInt8](repeating: 0, count: 4096)

    init(_ fd: Int32) {
        self.fd = fd
    }

    /// The next head, up to its blank line (excluded); nil when the connection ends first.
    mutating func next() -> String? {
        var found = pending.firstRange(of: Self.blankLine)
        while found == nil {
            let n = read(fd, &buffer, buffer.count)
            guard n > 0 else { return nil }
            pending += buffer[0..<n]
            found = pending.firstRange(of: Self.blankLine)
        }
        let end = found!
        defer { pending.removeFirst(end.upperBound) }
        return String(decoding: pending[..<end.lowerBound], as: UTF8.self)
    }

    /// The `\r\n\r\n` that ends a head.
    private static let blankLine: [UInt8] = [13, 10, 13, 10]
}
