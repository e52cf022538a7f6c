import Glibc
import NIOConcurrencyHelpers

/// A page-aligned block of memory that carries a transfer's bytes from the curl thread to the reader,
/// and goes back to the transfer for reuse once the reader is done with it.
///
/// Fixed capacity, allocated once: a transfer keeps two in rotation, so a long download neither copies
/// while growing a buffer nor takes fresh pages from the kernel for every batch.
///
/// Ownership is handed over, never shared: the curl thread writes into a buffer only while the transfer's
/// state machine holds it; once a batch is handed to the reader it is read-only. A returned buffer is
/// filled again only when the state machine holds the last reference (`isKnownUniquelyReferenced`), so a
/// batch a caller keeps is never written again. Hence `@unchecked Sendable`.
final class IOBuffer: @unchecked Sendable {
    /// The alignment of the memory, and the alignment `PartFile` needs for direct I/O.
    static let alignment = 4096
    /// The most bytes one curl write callback brings: the driver sets `CURLOPT_BUFFERSIZE` to this, and a
    /// transfer buffer has room for the high watermark plus one such chunk.
    static let largestChunk = 256 * 1024
    /// The same over SFTP and SCP, larger: libssh2 keeps four times curl's buffer asked for and unanswered
    /// (SFTP read requests; SCP's channel window), to at most 8 MiB, so 256 KiB allowed 1 MiB in flight,
    /// which holds a connection to 10 MiB/s at 100 ms of round trip and left the SSH server idle between
    /// answers on loopback. 2 MiB is libssh2's ceiling (8 MiB in flight); OpenSSH's sftp keeps 2 MiB.
    static let largestSSHChunk = 2 * 1024 * 1024

    /// The most bytes one write callback brings for a transfer of `remote`'s protocol (nil: HTTP).
    static func largestChunk(for remote: HTTPRequest.RemoteFileProtocol?) -> Int {
        remote?.overSSH == true ? largestSSHChunk : largestChunk
    }

    let base: UnsafeMutableRawPointer
    let capacity: Int
    /// Where the bytes start: chosen so that each byte's address is congruent to its file offset modulo
    /// `alignment` (see `reset(atFileOffset:)`), which lets whole pages go to disk straight from here.
    private(set) var start = 0
    private(set) var end = 0

    init(capacity: Int) {
        self.capacity = capacity
        if let block = Self.spares.withLockedValue({ spares in
            spares.lastIndex { $0.capacity == capacity }.map { spares.remove(at: $0) }
        }) {
            base = block.memory
            return
        }
        var memory: UnsafeMutableRawPointer?
        guard posix_memalign(&memory, IOBuffer.alignment, capacity) == 0, let memory else {
            fatalError("out of memory allocating a \(capacity)-byte transfer buffer")
        }
        base = memory
    }

    deinit {
        let kept = Self.spares.withLockedValue { spares in
            guard spares.count < Self.sparesKept else { return false }
            spares.append(Block(memory: base, capacity: capacity))
            return true
        }
        if !kept { free(base) }
    }

    /// Memory of ended transfers, for the next ones: a buffer is larger than malloc's mmap threshold, so
    /// each new transfer would otherwise map fresh pages (zeroed, faulted in) and unmap them at its end
    /// (a TLB shootdown on every core), which was a good part of the cost of a thousand small files.
    private struct Block: @unchecked Sendable {
        let memory: UnsafeMutableRawPointer
        let capacity: Int
    }
    private static let spares = NIOLockedValueBox<[Block]>([])
    /// Enough for the transfers of `-j 8` to hand theirs on; the rest is freed.
    static let sparesKept = 8

    var count: Int { end - start }
    var isEmpty: Bool { end == start }
    var room: Int { capacity - end }

    /// Empties the buffer; the next byte to arrive is meant for `offset` in the file.
    func reset(atFileOffset offset: Int64) {
        start = Int(offset % Int64(IOBuffer.alignment))
        end = start
    }

    /// Copies `bytes` in after what is there; the caller checked `room`.
    func append(_ bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count <= room, "transfer buffer overflow")
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        (base + end).copyMemory(from: source, byteCount: bytes.count)
        end += bytes.count
    }

    var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + start, count: end - start)
    }
}

/// Bytes that arrived together: a view of (part of) an `IOBuffer`, or of an array (tests, small answers).
package struct ByteBatch: Sendable {
    enum Storage: Sendable {
        case buffer(IOBuffer)
        case array([UInt8])
    }

    let storage: Storage
    private let lower: Int
    package let count: Int

    init(_ buffer: IOBuffer) {
        storage = .buffer(buffer)
        lower = 0
        count = buffer.count
    }

    package init(_ bytes: [UInt8]) {
        storage = .array(bytes)
        lower = 0
        count = bytes.count
    }

    private init(storage: Storage, lower: Int, count: Int) {
        self.storage = storage
        self.lower = lower
        self.count = count
    }

    package var isEmpty: Bool { count == 0 }

    /// The first `n` bytes, without copying.
    func prefix(_ n: Int) -> ByteBatch {
        ByteBatch(storage: storage, lower: lower, count: Swift.max(0, Swift.min(n, count)))
    }

    /// The bytes after the first `n`, without copying (a source's bytes compared before its range begins).
    func dropFirst(_ n: Int) -> ByteBatch {
        let skipped = Swift.max(0, Swift.min(n, count))
        return ByteBatch(storage: storage, lower: lower + skipped, count: count - skipped)
    }

    /// Calls `body` with the bytes; valid only inside `body`.
    package func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch storage {
        case .buffer(let buffer):
            return try body(UnsafeRawBufferPointer(rebasing: buffer.bytes[lower..<lower + count]))
        case .array(let array):
            return try array.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[lower..<lower + count])) }
        }
    }

    /// A copy of the bytes, for callers that keep them.
    var array: [UInt8] {
        withUnsafeBytes { Array($0) }
    }
}

extension ByteBatch: RandomAccessCollection {
    package var startIndex: Int { 0 }
    package var endIndex: Int { count }

    package subscript(position: Int) -> UInt8 {
        precondition(position >= 0 && position < count, "index out of range")
        return withUnsafeBytes { $0[position] }
    }

    package func withContiguousStorageIfAvailable<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        try withUnsafeBytes { try body($0.assumingMemoryBound(to: UInt8.self)) }
    }

    /// `Array.append(contentsOf:)` and `Array(_:)` copy through this: one memcpy, not a loop over bytes.
    package func _copyContents(initializing target: UnsafeMutableBufferPointer<UInt8>) -> (Iterator, Int) {
        let copied = Swift.min(count, target.count)
        if copied > 0 {
            withUnsafeBytes { bytes in
                UnsafeMutableRawBufferPointer(target).copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[..<copied]))
            }
        }
        return (Iterator(batch: self, position: copied), copied)
    }

    package func makeIterator() -> Iterator {
        Iterator(batch: self, position: 0)
    }

    package struct Iterator: IteratorProtocol {
        let batch: ByteBatch
        var position: Int

        package mutating func next() -> UInt8? {
            guard position < batch.count else { return nil }
            defer { position += 1 }
            return batch[position]
        }
    }
}

extension ByteBatch: Equatable {
    package static func == (a: ByteBatch, b: ByteBatch) -> Bool {
        a.withUnsafeBytes { x in b.withUnsafeBytes { y in x.elementsEqual(y) } }
    }
}

extension ByteBatch: ExpressibleByArrayLiteral {
    package init(arrayLiteral elements: UInt8...) {
        self.init(elements)
    }
}

/// What a byte batch must offer to be written to a file: `[UInt8]` (tests) and `ByteBatch` (transfers).
protocol ByteChunk: Sendable {
    var count: Int { get }
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}

extension ByteBatch: ByteChunk {}
extension Array: ByteChunk where Element == UInt8 {}
