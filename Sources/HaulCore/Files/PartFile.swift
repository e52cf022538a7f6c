import CLinux
import FoundationEssentials
import Glibc
import NIOConcurrencyHelpers

/// An open data file that receives a download's bytes with positional writes.
///
/// Large batches go to disk with direct I/O (`O_DIRECT`): the whole pages in the middle of a batch are
/// written from the transfer's buffer straight to the device, and only the partial pages at its ends pass
/// through the page cache. A download of gigabytes then neither fills the page cache (which on a VM is slow
/// to take from the host) nor leaves gigabytes to flush at the final fsync, and it costs a fraction of the
/// CPU. Where the file system refuses direct I/O, every write is buffered.
///
/// The whole pages go through a second descriptor, opened on the first large write and kept (the segments
/// of `-s N` share it); but a file written in one go (a small file, its body whole in memory) switches its
/// own descriptor to direct I/O for that write and back (`fcntl`), rather than open, check and close a
/// second one for a single write.
///
/// Every failure is a `.fileIO` `HaulError` naming the path. `@unchecked Sendable`: the descriptor is
/// set in `init` and cleared only by `close()`, which the owner calls after all writers are done;
/// `pwrite` at distinct offsets from several tasks (segments) is safe.
final class PartFile: @unchecked Sendable {
    let path: String
    private var descriptor: Int32
    /// What the writers share, under one lock (one allocation and one mutex a file, where three were made
    /// and torn down for each download, small or not).
    private let shared = NIOLockedValueBox(Shared())

    private struct Shared {
        /// The direct-I/O descriptor, opened on the first large write.
        var io = DirectIO.untried
        /// Bytes that went to disk with direct I/O.
        var directBytes: Int64 = 0
        /// What this process did to the file since it was opened: wrote data, truncated it, reserved blocks
        /// (or tried to and ran out of space).
        var written = false
        var truncated = false
        var reserved = false
        /// Set by `reserveAhead`: the file's size, and the ranges reserved so far.
        var reservation: (total: Int64, reserved: [ByteRange])?
        /// The ranges written (or tried) since `reserveAhead`, merged: never given back by
        /// `releaseUnwrittenReservations`.
        var reservedWrites: [ByteRange] = []
    }

    /// Bytes that went to disk with direct I/O (the rest went through the page cache).
    var directBytes: Int64 { shared.withLockedValue { $0.directBytes } }

    /// Whether a second descriptor was opened for direct I/O (for tests).
    var openedSecondDescriptor: Bool {
        shared.withLockedValue { state in
            switch state.io {
            case .open, .refused: return true
            case .untried, .switchable, .unavailable: return false
            }
        }
    }

    enum DirectIO {
        case untried
        /// The file's own descriptor takes `O_DIRECT` (`fcntl`) for a write that is the file's only one.
        case switchable
        case open(Int32)
        /// Opened, but writes failed with `EINVAL`; closed with the file.
        case refused(Int32)
        case unavailable
    }

    /// The smallest run of whole pages written directly: two pages. (Small files too: their pages then
    /// never enter the page cache, and their fsync has only metadata left to do.) A single page goes
    /// through the page cache: for 4 KiB the device's round trip costs more than the copy (2000 files of
    /// 4 KiB, written and checked as haul does from 8 threads with no network, took 0.19-0.26 s buffered
    /// against 0.23-0.31 s direct; from two pages on, direct was as fast or faster: docs/benchmarks.md).
    static let directMinimum = 2 * IOBuffer.alignment
    /// Set `HAUL_BUFFERED_IO=1` to write through the page cache only (to compare, or for a file system
    /// whose direct I/O is slow).
    static let directAllowed = getenv("HAUL_BUFFERED_IO").map { String(cString: $0) != "1" } ?? true

    /// Opens (creating if needed) `path` for writing; `truncate` drops any previous content. A symbolic
    /// link at `path` is refused, not followed.
    init(path: String, truncate: Bool) throws(HaulError) {
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
        self.claimed = claimed.map { (device: $0.st_dev, inode: $0.st_ino, size: Int64($0.st_size),
                                      birth: FileIdentity.birth(in: descriptor, "")) }
    }

    /// The open file's identity, which no rename changes, and its size before this process wrote to it:
    /// a name or a second descriptor is checked against it without another `fstat` of this one.
    private let claimed: (device: dev_t, inode: ino_t, size: Int64, birth: FileIdentity.Birth?)?

    /// The size when it was claimed (opened and locked), before any write of this process.
    var claimedSize: Int64? { claimed?.size }

    /// `DEVICE:INODE` of the file and its birth time, which its rename keeps (`FileIdentity`).
    var identity: String? {
        if let claimed {
            return FileIdentity.text(device: claimed.device, inode: claimed.inode, birth: claimed.birth)
        }
        return (try? status()).map {
            FileIdentity.text(device: $0.st_dev, inode: $0.st_ino, birth: FileIdentity.birth(in: descriptor, ""))
        }
    }

    /// Whether `info` (an `fstat` or `fstatat`) describes this open file.
    func isFile(_ info: stat) -> Bool {
        if let claimed { return info.st_dev == claimed.device && info.st_ino == claimed.inode }
        guard let mine = try? status() else { return false }
        return info.st_dev == mine.st_dev && info.st_ino == mine.st_ino
    }

    /// Whether the file is known to be empty without asking the kernel: claimed empty and neither written,
    /// truncated nor reserved since (a new part: its first body has nothing to drop).
    var isEmptyAsClaimed: Bool {
        claimed?.size == 0 && shared.withLockedValue { !$0.written && !$0.truncated && !$0.reserved }
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

    /// Whether the file holds nothing but what a reservation took: claimed empty, and no byte written since.
    var holdsOnlyReservation: Bool {
        claimed?.size == 0 && shared.withLockedValue { $0.reserved && !$0.written }
    }

    /// Reserving ahead of the writes, for the segments of `-s N`, which write at several places of the file at
    /// once: on ext4 a direct write into a hole, or past the end, holds the file's lock for the whole device
    /// round trip, so four segments' writes took turns, and 1 GiB over four connections took 1.4-1.6x as long
    /// as over one; into reserved blocks (`fallocate`: unwritten extents that read as zeros) they share it.
    /// Each write reserves from its offset up to `reserveWindow` ahead, within the file's size, unless that is
    /// reserved already: what a server announces is never reserved before its bytes come (a server that
    /// claims a terabyte and sends nothing costs the disk one window per connection, not a terabyte).
    static let reserveWindow: Int64 = 32 << 20

    /// From now on, every write that is not alone (`write(_:at:completing:alone:)`) first reserves the blocks
    /// it and the next `reserveWindow` bytes need, within `total`, the file's size.
    func reserveAhead(of total: Int64) {
        shared.withLockedValue { $0.reservation = (total, []) }
    }

    /// Reserves [offset, offset + window) within the file's size where the write of `count` bytes at `offset`
    /// is not inside a reservation already. Where the file system cannot reserve, reserving stops (the writes
    /// fill holes as before); a disk or quota too short throws.
    private func reserve(at offset: Int64, count: Int) throws(HaulError) {
        let wanted = shared.withLockedValue { shared -> ByteRange? in
            guard let state = shared.reservation else { return nil }
            let end = offset + Int64(count)
            if ByteRange.subtract(state.reserved, from: ByteRange(offset, end)).isEmpty { return nil }
            let upTo = Swift.min(state.total, Swift.max(end, offset + Self.reserveWindow))
            return upTo > offset ? ByteRange(offset, upTo) : nil
        }
        guard let wanted else { return }
        guard haul_fallocate(descriptor, wanted.start, wanted.count) == 0 else {
            let code = errno
            switch code {
            case ENOSPC, EDQUOT, EFBIG:
                // A failed reservation may have kept part of itself (ext4 allocates as it goes): counted as one,
                // so that a part that got no byte of ours is still removed when its download fails.
                shared.withLockedValue { $0.reserved = true }
                throw PartFile.error("cannot reserve \(ByteFormat.size(wanted.count)) in", path, code)
            default:
                shared.withLockedValue { $0.reservation = nil }
                return
            }
        }
        shared.withLockedValue { shared in
            shared.reserved = true
            guard let current = shared.reservation else { return }
            shared.reservation = (current.total, ByteRange.merged(current.reserved + [wanted]))
        }
    }

    /// Gives back the blocks reserved ahead of the writes (`reserveAhead`) that no write reached and that
    /// `kept` (what the resume state vouches for) does not cover: a stopped segmented download holds its
    /// bytes, not a window of up to `reserveWindow` ahead of each connection (64 downloads of `-s 16`
    /// stopped with 1.6 GB fetched held 20 GB of disk). Only once no write runs (its segments have ended).
    /// Returns the bytes given back.
    @discardableResult
    func releaseUnwrittenReservations(keeping kept: [ByteRange]) -> Int64 {
        let unwritten = shared.withLockedValue { shared -> [ByteRange] in
            guard let current = shared.reservation else { return [] }
            let taken = ByteRange.merged(shared.reservedWrites + kept)
            let free = current.reserved.flatMap { ByteRange.subtract(taken, from: $0) }
            shared.reservation = (current.total, ByteRange.merged(current.reserved.flatMap {
                ByteRange.subtract(free, from: $0)
            }))
            return free
        }
        var released: Int64 = 0
        for range in unwritten where release(range) { released += range.count }
        return released
    }

    /// Gives the blocks of `range` back to the file system (the range reads as zeros, the size stays): on a
    /// full disk, room for the state file that makes the rest resumable. False where it cannot.
    @discardableResult
    func release(_ range: ByteRange) -> Bool {
        guard range.count > 0 else { return true }
        return (try? withDescriptor { fd in haul_punch_hole(fd, range.start, range.count) == 0 }) ?? false
    }

    /// The file's current size.
    func size() throws(HaulError) -> Int64 {
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
    func truncate(to length: Int64) throws(HaulError) {
        shared.withLockedValue { shared in
            shared.truncated = true
            // The blocks past `length` go with the cut: what was reserved there is no longer.
            guard let current = shared.reservation else { return }
            let cut = [ByteRange(length, .max)]
            shared.reservation = (current.total, current.reserved.flatMap { ByteRange.subtract(cut, from: $0) })
        }
        guard ftruncate(descriptor, off_t(length)) == 0 else { throw PartFile.error("cannot truncate", path) }
    }

    deinit {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
        stopDirectIO()
    }

    /// Writes all of `bytes` at `offset`: the whole pages in the middle with direct I/O when the batch is
    /// large and its memory lines up with the file's pages (transfer buffers do), the rest buffered.
    /// `completing`: these are the file's last bytes, and the download goes on to its finish (see
    /// `WriteJournal.record`). `alone`: no other write to this file runs beside this one (a body over one
    /// connection, not a segment); with `completing`, none comes after it either, and its direct part
    /// switches the file's own descriptor instead of opening a second one.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64, completing: Bool = false,
                       alone: Bool = false) throws(HaulError) {
        if !alone { try reserve(at: offset, count: bytes.count) }
        shared.withLockedValue { shared in
            shared.written = true
            if shared.reservation != nil {
                let range = ByteRange(offset, offset + Int64(bytes.count))
                shared.reservedWrites = ByteRange.merged(shared.reservedWrites + [range])
            }
        }
        try writeData(bytes, at: offset, switching: alone && completing)
        journal?.record(bytes, at: offset, completing: completing)
        digest.withLockedValue { $0?.feed(bytes, at: offset) }
    }

    private func writeData(_ bytes: UnsafeRawBufferPointer, at offset: Int64, switching: Bool) throws(HaulError) {
        let align = Int64(IOBuffer.alignment)
        let head = (align - offset % align) % align
        let bodyEnd = (offset + Int64(bytes.count)) / align * align
        let bodyStart = offset + head
        guard Self.directAllowed, bodyEnd - bodyStart >= Self.directMinimum, let base = bytes.baseAddress,
            UInt(bitPattern: base + Int(head)) % UInt(align) == 0
        else {
            return try writeAll(descriptor, bytes, at: offset)
        }
        let split = { (from: Int64, to: Int64) in
            UnsafeRawBufferPointer(rebasing: bytes[Int(from - offset)..<Int(to - offset)])
        }
        // The whole pages go through the file's own descriptor, switched, or through the second one.
        enum Route { case switched(flags: Int32), second(Int32) }
        let route: Route
        if switching, let flags = switchableFlags() {
            route = .switched(flags: flags)
        } else if let fd = directDescriptor() {
            route = .second(fd)
        } else {
            return try writeAll(descriptor, bytes, at: offset)
        }
        try writeAll(descriptor, split(offset, bodyStart), at: offset)
        switch route {
        case .switched(let flags): try writeSwitched(split(bodyStart, bodyEnd), at: bodyStart, flags: flags)
        case .second(let fd): try writeThroughSecond(fd, split(bodyStart, bodyEnd), at: bodyStart)
        }
        try writeAll(descriptor, split(bodyEnd, offset + Int64(bytes.count)), at: bodyEnd)
    }

    /// A direct write waits for the device: from a mebibyte on, long enough that the I/O executor lets
    /// another job run meanwhile (`IOExecutor.blocking`); a small file's hundred kilobytes are over sooner
    /// than another thread would wake.
    static let longDirectWrite = 1 << 20

    private static func writeDirect(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(SystemError) {
        guard bytes.count >= longDirectWrite else { return try FileIO.writeAll(fd, bytes, at: offset) }
        try IOExecutor.blocking { () throws(SystemError) in try FileIO.writeAll(fd, bytes, at: offset) }
    }

    /// Writes whole pages through the second, direct-I/O descriptor.
    private func writeThroughSecond(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(HaulError) {
        do {
            try Self.writeDirect(fd, bytes, at: offset)
            shared.withLockedValue { $0.directBytes += Int64(bytes.count) }
        } catch where error.code == EINVAL {
            // The file system takes O_DIRECT at open but not for writes: buffered from now on. The
            // descriptor stays open until `close`, since another segment may be writing with it now.
            shared.withLockedValue { if case .open(let fd) = $0.io { $0.io = .refused(fd) } }
            try writeAll(descriptor, bytes, at: offset)
        } catch {
            throw PartFile.error("cannot write", path, error.code)
        }
    }

    /// Closes the direct-I/O descriptor, if any (when no writer can be using it); later writes are buffered.
    private func stopDirectIO() {
        let fd = shared.withLockedValue { state -> Int32? in
            defer { state.io = .unavailable }
            switch state.io {
            case .open(let fd), .refused(let fd): return fd
            case .untried, .switchable, .unavailable: return nil
            }
        }
        if let fd { _ = Glibc.close(fd) }
    }

    /// The descriptor's flags (without `O_DIRECT`) when the whole pages of a file written in one go may go
    /// direct by switching it: no second descriptor is open, and direct I/O was not refused; nil otherwise.
    private func switchableFlags() -> Int32? {
        shared.withLockedValue { state -> Int32? in
            switch state.io {
            case .untried, .switchable: break
            case .open, .refused, .unavailable: return nil
            }
            let flags = fcntl(descriptor, F_GETFL)
            guard flags >= 0 else {
                state.io = .unavailable
                return nil
            }
            state.io = .switchable
            return flags & ~haul_o_direct()
        }
    }

    /// Writes whole pages with the file's own descriptor switched to `O_DIRECT`, and switches it back (a
    /// checksum or a preview reads through it later). Where the file system refuses direct I/O, at the
    /// switch or at the write, this write and every later one are buffered.
    private func writeSwitched(_ bytes: UnsafeRawBufferPointer, at offset: Int64, flags: Int32) throws(HaulError) {
        guard fcntl(descriptor, F_SETFL, flags | haul_o_direct()) == 0 else {
            shared.withLockedValue { $0.io = .unavailable }
            return try writeAll(descriptor, bytes, at: offset)
        }
        var failure: Int32 = 0
        do { try Self.writeDirect(descriptor, bytes, at: offset) } catch { failure = error.code }
        // Back to buffered before anything else: a failed switch back would leave reads needing alignment.
        guard fcntl(descriptor, F_SETFL, flags) == 0 else { throw PartFile.error("cannot set the flags of", path) }
        switch failure {
        case 0:
            shared.withLockedValue { $0.directBytes += Int64(bytes.count) }
        case EINVAL:
            shared.withLockedValue { $0.io = .unavailable }
            try writeAll(descriptor, bytes, at: offset)
        default:
            throw PartFile.error("cannot write", path, failure)
        }
    }

    private func directDescriptor() -> Int32? {
        shared.withLockedValue { state in
            switch state.io {
            case .open(let fd): return fd
            case .refused, .unavailable: return nil
            case .untried, .switchable:
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

    func write(_ bytes: some ByteChunk, at offset: Int64, completing: Bool = false,
                       alone: Bool = false) throws(HaulError) {
        var failure: HaulError?
        bytes.withUnsafeBytes { buffer in
            do {
                try write(buffer, at: offset, completing: completing, alone: alone)
            } catch {
                failure = HaulError.from(error)
            }
        }
        if let failure { throw failure }
    }

    /// Flushes the data to stable storage.
    func sync() throws(HaulError) {
        guard FileIO.sync(descriptor) == 0 else { throw PartFile.error("cannot sync", path) }
    }

    /// Flushes the data (not all metadata) to stable storage: what a checkpoint needs.
    func syncData() throws(HaulError) {
        guard FileIO.sync(descriptor, dataOnly: true) == 0 else { throw PartFile.error("cannot sync", path) }
    }

    func close() throws(HaulError) {
        stopDirectIO()
        guard descriptor >= 0 else { return }
        let result = Glibc.close(descriptor)
        descriptor = -1
        guard result == 0 else { throw PartFile.error("cannot close", path) }
    }

    static func error(_ what: String, _ path: String, _ code: Int32 = errno) -> HaulError {
        HaulError(.fileIO, "\(what) \(path): \(String(cString: strerror(code)))", reason: FailureReason(errno: code))
    }
}
