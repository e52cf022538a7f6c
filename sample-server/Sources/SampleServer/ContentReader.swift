#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore

/// Reads chunks of a ``ServedFile``'s bytes into `ByteBuffer`s, keeping a disk file open for one response.
final class ContentReader {
    private let content: ServedFile.Content
    private let descriptor: Int32
    private let allocator = ByteBufferAllocator()

    init(_ content: ServedFile.Content) throws {
        self.content = content
        if case .disk(let path) = content {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw ContentReaderError.cannotOpen(path) }
        } else {
            descriptor = -1
        }
    }

    deinit {
        if descriptor >= 0 {
            close(descriptor)
        }
    }

    /// The `count` bytes at `offset`, which must lie inside the file.
    func read(offset: Int, count: Int) throws -> ByteBuffer {
        switch content {
        case .memory(let buffer):
            return buffer.getSlice(at: buffer.readerIndex + offset, length: count) ?? ByteBuffer()
        case .generated(let file):
            var buffer = allocator.buffer(capacity: count)
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { bytes in
                file.fill(UnsafeMutableRawBufferPointer(rebasing: bytes[..<count]), offset: offset)
                return count
            }
            return buffer
        case .disk(let path):
            var buffer = allocator.buffer(capacity: count)
            var done = 0
            while done < count {
                var got = 0
                buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count - done) { bytes in
                    got = pread(descriptor, bytes.baseAddress, count - done, off_t(offset + done))
                    return Swift.max(0, got)
                }
                if got < 0 && errno == EINTR {
                    continue
                }
                guard got > 0 else { throw ContentReaderError.shortRead(path) }
                done += got
            }
            return buffer
        }
    }
}

enum ContentReaderError: Error {
    case cannotOpen(String)
    case shortRead(String)
}
