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
        var found = pending.headEnd
        while found == nil {
            let n = read(fd, &buffer, buffer.count)
            guard n > 0 else { return nil }
            pending += buffer[0..<n]
            found = pending.headEnd
        }
        let end = found!
        defer { pending.removeFirst(end + 4) }
        return String(decoding: pending[..<end], as: UTF8.self)
    }
}

private extension Array where Element == UInt8 {
    /// Where the first `\r\n\r\n` starts.
    var headEnd: Int? {
        guard count >= 4 else { return nil }
        return (0...(count - 4)).first { self[$0] == 13 && self[$0 + 1] == 10 && self[$0 + 2] == 13 && self[$0 + 3] == 10 }
    }
}
