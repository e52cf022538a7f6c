import Glibc

/// Binds `fd` (an `AF_INET` stream socket) to 127.0.0.1 on a port the kernel picks, and listens with
/// `backlog` when given; returns the port, or nil when a call failed.
public func bindToLoopback(_ fd: Int32, listening backlog: Int32? = nil) -> Int? {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
            guard bind(fd, socketAddress, length) == 0 else { return false }
            if let backlog, listen(fd, backlog) != 0 { return false }
            return getsockname(fd, socketAddress, &length) == 0
        }
    }
    return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
}

/// A TCP socket listening on 127.0.0.1 on a port the kernel picks (`SO_REUSEADDR`, `backlog`): its descriptor
/// and port. Throws when a call failed.
public func loopbackListener(backlog: Int32 = 16) throws -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var yes: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    guard let port = bindToLoopback(fd, listening: backlog) else {
        close(fd)
        throw LoopbackListenerError()
    }
    return (fd, port)
}

public struct LoopbackListenerError: Error {}
