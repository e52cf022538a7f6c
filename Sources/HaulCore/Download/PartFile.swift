import CLinux
import Foundation
import NIOConcurrencyHelpers

/// An open data file that receives a download's bytes with positional writes.
///
/// Large batches go to disk with direct I/O (`O_DIRECT`, on a second descriptor): the whole pages in the
/// middle of a batch are written from the transfer's buffer straight to the device, and only the partial
/// pages at its ends pass through the page cache. A download of gigabytes then neither fills the page
/// cache (which on a VM is slow to take from the host) nor leaves gigabytes to flush at the final fsync,
/// and it costs a fraction of the CPU. Where the file system refuses direct I/O, every write is buffered.
///
/// Every failure is a `.fileIO` `HaulError` naming the path. `@unchecked Sendable`: the descriptor is
/// set in `init` and cleared only by `close()`, which the owner calls after all writers are done;
/// `pwrite` at distinct offsets from several tasks (segments) is safe.
package final class PartFile: @unchecked Sendable {
    package let path: String
    private var descriptor: Int32
    /// The direct-I/O descriptor, opened on the first large write.
    private let direct = NIOLockedValueBox((io: DirectIO.untried, bytes: Int64(0), async: Int64(0)))

    /// Bytes that went to disk with direct I/O (the rest went through the page cache).
    package var directBytes: Int64 { direct.withLockedValue { $0.bytes } }
    /// Of those, the bytes whose write was submitted without waiting (`write`).
    package var asyncBytes: Int64 { direct.withLockedValue { $0.async } }

    /// The size the download expects the file to reach, and what the file was extended to ahead of its
    /// writes (`write`): 0 until a direct write extended it.
    private let sizing = NIOLockedValueBox((expected: Int64?.none, extendedTo: Int64(0)))
    /// The smallest file extended ahead of its writes: below it the one or two batches gain nothing.
    static let extendMinimum: Int64 = 8 << 20

    enum DirectIO {
        case untried
        case open(Int32)
        /// Opened, but writes failed with `EINVAL`; closed with the file.
        case refused(Int32)
        case unavailable
    }

    /// The smallest run of whole pages written directly: one page. (Small files too: their pages then
    /// never enter the page cache, and their fsync has only metadata left to do.)
    static let directMinimum = IOBuffer.alignment
    /// Set `HAUL_BUFFERED_IO=1` to write through the page cache only (to compare, or for a file system
    /// whose direct I/O is slow).
    static let directAllowed = getenv("HAUL_BUFFERED_IO").map { String(cString: $0) != "1" } ?? true

    /// Opens (creating if needed) `path` for writing; `truncate` drops any previous content. A symbolic
    /// link at `path` is refused, not followed.
    package init(path: String, truncate: Bool) throws(HaulError) {
        self.path = path
        journal = nil
        let flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (truncate ? O_TRUNC : 0)
        let fd = open(path, flags, 0o644)
        guard fd >= 0 else { throw PartFile.error("cannot create", path) }
        descriptor = fd
        claimed = nil
    }

    /// Takes over an open descriptor (readable and writable, from `OutputDirectory`); `path` names it in
    /// messages only: the file is never opened by its name again. `claimed` is its `fstat` when the caller
    /// took one (a part, once locked).
    init(descriptor: Int32, path: String, claimed: stat? = nil, journal: WriteJournal? = nil) {
        self.path = path
        self.descriptor = descriptor
        self.journal = journal
        self.claimed = claimed.map { (device: $0.st_dev, inode: $0.st_ino, size: Int64($0.st_size)) }
    }

    /// The open file's identity, which no rename changes, and its size before this process wrote to it:
    /// a name or a second descriptor is checked against it without another `fstat` of this one.
    private let claimed: (device: dev_t, inode: ino_t, size: Int64)?
    /// Neither written nor truncated since it was opened.
    private let untouched = NIOLockedValueBox(true)

    /// The size when it was claimed (opened and locked), before any write of this process.
    var claimedSize: Int64? { claimed?.size }

    /// Whether `info` (an `fstat` or `fstatat`) describes this open file.
    func isFile(_ info: stat) -> Bool {
        if let claimed { return info.st_dev == claimed.device && info.st_ino == claimed.inode }
        guard let mine = try? status() else { return false }
        return info.st_dev == mine.st_dev && info.st_ino == mine.st_ino
    }

    /// Whether the file is known to be empty without asking the kernel: claimed empty and neither written
    /// nor truncated since (a new part: its first body has nothing to drop).
    var isEmptyAsClaimed: Bool {
        claimed?.size == 0 && untouched.withLockedValue { $0 }
    }

    /// A download's part records each write here (`NAME.part.journal`); nil for other files.
    let journal: WriteJournal?
    /// The digest `--checksum` asks for, fed by the writes while they come in order from offset 0.
    private let digest = NIOLockedValueBox<RunningDigest?>(nil)

    /// Starts (or starts over) a digest of what is written from offset 0 on.
    func startDigest(_ algorithm: FileDigest.Algorithm) {
        digest.withLockedValue { $0 = RunningDigest(algorithm) }
    }

    /// The running digest's hex when the writes covered the file's `size` bytes in order; nil otherwise.
    func writtenDigest(size: Int64) -> String? {
        digest.withLockedValue { $0?.hex(ofSize: size) }
    }

    /// The file's current size.
    package func size() throws(HaulError) -> Int64 {
        Int64(try status().st_size)
    }

    /// `fstat` of the open file.
    func status() throws(HaulError) -> stat {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw PartFile.error("cannot stat", path) }
        return info
    }

    /// Runs `body` with the open descriptor (to read the file back: a checksum, a preview), never by name.
    func withDescriptor<T>(_ body: (Int32) throws(HaulError) -> T) throws(HaulError) -> T {
        try body(descriptor)
    }

    /// Cuts the file to `length` bytes.
    package func truncate(to length: Int64) throws(HaulError) {
        untouched.withLockedValue { $0 = false }
        guard ftruncate(descriptor, off_t(length)) == 0 else { throw PartFile.error("cannot truncate", path) }
        sizing.withLockedValue { $0.extendedTo = Swift.min($0.extendedTo, length) }
    }

    /// The file is to reach `size` bytes (the answer announced them): from its first direct write on, it is
    /// extended to that size at once (sparsely: no block is allocated), so that its direct writes fall within
    /// it. ext4 carries out a direct write that extends a file inside `io_submit`; only one within the file's
    /// size is asynchronous, which lets `write` hash a batch while the device takes it. Until that first
    /// write the file keeps its size, so a download that fails before its first byte still leaves an empty
    /// part (removed). Files under `extendMinimum` are left alone.
    package func expect(size: Int64?) {
        sizing.withLockedValue { $0.expected = size.flatMap { $0 >= Self.extendMinimum ? $0 : nil } }
    }

    deinit {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
        stopDirectIO()
    }

    /// Writes all of `bytes` at `offset`: the whole pages in the middle with direct I/O when the batch is
    /// large and its memory lines up with the file's pages (transfer buffers do), the rest buffered.
    ///
    /// Within the file's size (see `expect(size:)`) the direct part is submitted without waiting (Linux's
    /// native AIO, one request at a time per thread), the journal's hash of the batch is taken while the
    /// device writes, and then the write is waited for; the record is added once the bytes are written.
    package func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(HaulError) {
        untouched.withLockedValue { $0 = false }
        let underWay = try startData(bytes, at: offset)
        let record = journal == nil ? nil : WriteJournal.record(of: bytes, at: offset)
        if let underWay { try finish(underWay, of: bytes, at: offset) }
        if let record { journal?.append(record) }
        digest.withLockedValue { $0?.feed(bytes, at: offset) }
    }

    /// A direct write submitted and not yet waited for: the bytes `from..<to` of the file.
    private struct UnderWay {
        let context: UInt
        let descriptor: Int32
        let from: Int64
        let to: Int64
    }

    /// Writes the buffered parts of `bytes` and the direct one; returns the direct one when it is under way
    /// (submitted, not yet written), nil when everything is written.
    private func startData(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(HaulError) -> UnderWay? {
        let align = Int64(IOBuffer.alignment)
        let head = (align - offset % align) % align
        let bodyEnd = (offset + Int64(bytes.count)) / align * align
        let bodyStart = offset + head
        guard Self.directAllowed, bodyEnd - bodyStart >= Self.directMinimum, let base = bytes.baseAddress,
            UInt(bitPattern: base + Int(head)) % UInt(align) == 0, let fd = directDescriptor()
        else {
            try writeAll(descriptor, bytes, at: offset)
            return nil
        }
        let split = { (from: Int64, to: Int64) in
            UnsafeRawBufferPointer(rebasing: bytes[Int(from - offset)..<Int(to - offset)])
        }
        try writeAll(descriptor, split(offset, bodyStart), at: offset)
        let body = split(bodyStart, bodyEnd)
        if isWithinSize(bodyEnd), let context = AsyncWrites.context(),
            haul_aio_pwrite(context, fd, body.baseAddress, body.count, bodyStart) == 0
        {
            let underWay = UnderWay(context: context, descriptor: fd, from: bodyStart, to: bodyEnd)
            do {
                try writeAll(descriptor, split(bodyEnd, offset + Int64(bytes.count)), at: bodyEnd)
            } catch {
                // Not before the device is done with the batch's memory.
                try? finish(underWay, of: bytes, at: offset)
                throw error
            }
            return underWay
        }
        try writeDirect(fd, body, at: bodyStart)
        try writeAll(descriptor, split(bodyEnd, offset + Int64(bytes.count)), at: bodyEnd)
        return nil
    }

    /// Whether the file's size reaches `end`, extending it to the expected size first if it is not yet.
    private func isWithinSize(_ end: Int64) -> Bool {
        sizing.withLockedValue { sizing in
            if end <= sizing.extendedTo { return true }
            guard let expected = sizing.expected, end <= expected else { return false }
            var info = stat()
            guard fstat(descriptor, &info) == 0 else { return false }
            // Never shorter: a part longer than announced keeps its bytes.
            if Int64(info.st_size) < expected, ftruncate(descriptor, off_t(expected)) != 0 { return false }
            sizing.extendedTo = Swift.max(expected, Int64(info.st_size))
            return end <= sizing.extendedTo
        }
    }

    /// Waits for the direct write under way. Whatever it did not write is written now: the rest of a short
    /// write through the page cache, a refused one as `writeDirect` does.
    private func finish(_ write: UnderWay, of bytes: UnsafeRawBufferPointer, at offset: Int64) throws(HaulError) {
        var result: Int64 = 0
        // A failed wait would leave the kernel reading the batch's memory after it is reused: a bug to stop
        // at, not an error to report (EINTR, the one expected, is retried in the shim).
        guard haul_aio_wait(write.context, &result) == 0 else {
            fatalError("waiting for a direct write of \(path) failed: \(String(cString: strerror(errno)))")
        }
        let body = UnsafeRawBufferPointer(rebasing: bytes[Int(write.from - offset)..<Int(write.to - offset)])
        if result >= 0 {
            direct.withLockedValue {
                $0.bytes += result
                $0.async += result
            }
            if result < body.count {
                try writeAll(descriptor, UnsafeRawBufferPointer(rebasing: body[Int(result)...]), at: write.from + result)
            }
        } else if result == -Int64(EINVAL) {
            try writeDirect(write.descriptor, body, at: write.from)
        } else {
            throw PartFile.error("cannot write", path, Int32(-result))
        }
    }

    /// A direct write, waited for. Where the file system takes `O_DIRECT` at open but not for writes
    /// (`EINVAL`), buffered from now on; the descriptor stays open until `close`, since another segment may be
    /// writing with it now.
    private func writeDirect(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(HaulError) {
        do {
            try FileIO.writeAll(fd, bytes, at: offset)
            direct.withLockedValue { $0.bytes += Int64(bytes.count) }
        } catch where error.code == EINVAL {
            direct.withLockedValue { if case .open(let fd) = $0.io { $0.io = .refused(fd) } }
            try writeAll(descriptor, bytes, at: offset)
        } catch {
            throw PartFile.error("cannot write", path, error.code)
        }
    }

    /// Closes the direct-I/O descriptor, if any (when no writer can be using it); later writes are buffered.
    private func stopDirectIO() {
        let fd = direct.withLockedValue { state -> Int32? in
            defer { state.io = .unavailable }
            switch state.io {
            case .open(let fd), .refused(let fd): return fd
            case .untried, .unavailable: return nil
            }
        }
        if let fd { _ = Glibc.close(fd) }
    }

    private func directDescriptor() -> Int32? {
        direct.withLockedValue { state in
            switch state.io {
            case .open(let fd): return fd
            case .refused, .unavailable: return nil
            case .untried:
                let fd = reopenDirect()
                state.io = fd.map { .open($0) } ?? .unavailable
                return fd
            }
        }
    }

    /// A second descriptor of the same file with `O_DIRECT`, reopened through `/proc/self/fd` (never by
    /// name: the name could point elsewhere by now), checked to be the same inode.
    private func reopenDirect() -> Int32? {
        let fd = open("/proc/self/fd/\(descriptor)", O_WRONLY | haul_o_direct() | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var reopened = stat()
        guard fstat(fd, &reopened) == 0, isFile(reopened) else {
            _ = Glibc.close(fd)
            return nil
        }
        return fd
    }

    private func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(HaulError) {
        do { try FileIO.writeAll(fd, bytes, at: offset) } catch { throw PartFile.error("cannot write", path, error.code) }
    }

    package func write(_ bytes: some ByteChunk, at offset: Int64) throws(HaulError) {
        var failure: HaulError?
        bytes.withUnsafeBytes { buffer in
            do { try write(buffer, at: offset) } catch { failure = HaulError.from(error) }
        }
        if let failure { throw failure }
    }

    /// Flushes the data to stable storage.
    package func sync() throws(HaulError) {
        guard fsync(descriptor) == 0 else { throw PartFile.error("cannot sync", path) }
    }

    /// Flushes the data (not all metadata) to stable storage: what a checkpoint needs.
    package func syncData() throws(HaulError) {
        guard fdatasync(descriptor) == 0 else { throw PartFile.error("cannot sync", path) }
    }

    package func close() throws(HaulError) {
        stopDirectIO()
        guard descriptor >= 0 else { return }
        let result = Glibc.close(descriptor)
        descriptor = -1
        guard result == 0 else { throw PartFile.error("cannot close", path) }
    }

    static func error(_ what: String, _ path: String, _ code: Int32 = errno) -> HaulError {
        HaulError(.fileIO, "\(what) \(path): \(String(cString: strerror(code)))")
    }
}

/// Each thread's context for asynchronous direct writes (`PartFile.write`): one request at a time, since a
/// write submits and waits without suspending. Made on a thread's first such write and released with the
/// thread; nil where the kernel offers none (the writes then wait as they go).
private enum AsyncWrites {
    /// Stored for a thread whose context could not be made, so that it is not asked for again.
    private static let unavailable = UInt.max

    private static let key: pthread_key_t? = {
        var key = pthread_key_t()
        let made = pthread_key_create(&key) { value in
            guard let value else { return }
            let context = UInt(bitPattern: value)
            if context != AsyncWrites.unavailable { haul_aio_destroy(context) }
        }
        return made == 0 ? key : nil
    }()

    static func context() -> UInt? {
        guard let key else { return nil }
        if let value = pthread_getspecific(key) {
            let context = UInt(bitPattern: value)
            return context == unavailable ? nil : context
        }
        var context: UInt = 0
        let made = haul_aio_setup(1, &context) == 0 && context != 0
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: made ? context : unavailable))
        return made ? context : nil
    }
}
