import Glibc

/// A failed system call's `errno`, with the system's words for it.
package struct SystemError: Error, Equatable, CustomStringConvertible {
    package let code: Int32

    package init(_ code: Int32 = errno) {
        self.code = code
    }

    package var description: String { String(cString: strerror(code)) }
}

/// Blocking reads and writes of a descriptor, the one place that retries interruptions (`EINTR`) and short
/// counts. An `offset` reads or writes there (`pread`/`pwrite`, the descriptor's position stays); nil uses
/// and moves the position (`read`/`write`).
package enum FileIO {
    /// `fsync`, or `fdatasync` when `dataOnly`: its result, `errno` its own. A wait for the device, so on the
    /// I/O executor's threads the thread does not count as running meanwhile (`IOExecutor.blocking`).
    static func sync(_ fd: Int32, dataOnly: Bool = false) -> Int32 {
        IOExecutor.blocking { dataOnly ? fdatasync(fd) : fsync(fd) }
    }

    /// Writes all of `bytes`.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64? = nil)
        throws(SystemError)
    {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let n = offset.map { pwrite(fd, base + done, bytes.count - done, off_t($0) + off_t(done)) }
                ?? write(fd, base + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError()
            }
            done += n
        }
    }

    /// `writeAll` of an array.
    package static func writeAll(_ fd: Int32, _ bytes: [UInt8], at offset: Int64? = nil) throws(SystemError) {
        try bytes.withUnsafeBytes { buffer in Result { () throws(SystemError) in try writeAll(fd, buffer, at: offset) } }.get()
    }

    /// `read` into an array, from its start.
    package static func read(_ fd: Int32, into bytes: inout [UInt8], at offset: Int64? = nil) throws(SystemError) -> Int {
        try bytes.withUnsafeMutableBytes { raw in Result { () throws(SystemError) in try read(fd, into: raw, at: offset) } }.get()
    }

    /// `readFully` into an array.
    package static func readFully(_ fd: Int32, into bytes: inout [UInt8], at offset: Int64? = nil) throws(SystemError)
        -> Int
    {
        try bytes.withUnsafeMutableBytes { raw in Result { () throws(SystemError) in try readFully(fd, into: raw, at: offset) } }
            .get()
    }

    /// One read of at most `buffer.count` bytes; 0 at the end of the file.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64? = nil)
        throws(SystemError) -> Int
    {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        while true {
            let n = offset.map { pread(fd, base, buffer.count, off_t($0)) } ?? Glibc.read(fd, base, buffer.count)
            if n >= 0 { return n }
            if errno != EINTR { throw SystemError() }
        }
    }

    /// Reads until `buffer` is full or the file ends; returns how many bytes came.
    static func readFully(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64? = nil)
        throws(SystemError) -> Int
    {
        var done = 0
        while done < buffer.count {
            let n = try read(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]),
                             at: offset.map { $0 + Int64(done) })
            if n == 0 { break }
            done += n
        }
        return done
    }
}
