import CXXHash
import Glibc
import NIOConcurrencyHelpers

/// `NAME.part.journal`: what was written into `NAME.part`, one record per batch (its offset, its length, the
/// XXH3 of its bytes), appended right after the batch's write and never synced on its own.
///
/// The state file (`NAME.part.json`) says which bytes are durable: it is replaced only after an fsync of the
/// data (a checkpoint, every 250 ms). The journal says which bytes reached the kernel since, at the cost of
/// one small append per batch. After a process crash (kill -9, the OOM killer) those bytes are in the file,
/// and the next run keeps every one whose record still matches what the file holds; after a power loss
/// the file's tail may hold zeros or old bytes instead, which fail their check and are fetched again. So a
/// crash costs at most what was still in memory, and no check ever lets a wrong byte through.
///
/// A download that ends quickly never opens the file: the records wait in memory until the download has
/// run long enough to be worth a file (`Claim.startRecording`), then go to disk with the ones that follow.
///
/// Layout: a 16-byte header (`haul-journal-1\n` and a NUL), then 32-byte records, each little-endian
/// offset, length, XXH3-64 of the bytes, and an XXH3-64 of those 24 bytes (a torn or stray record is
/// told from a real one). Records may overlap and come in any order (segments); the file is read whole,
/// so it is kept to `sizeLimit`.
final class WriteJournal: Sendable {
    struct Record: Equatable, Sendable {
        var offset: Int64
        var length: Int64
        var hash: UInt64

        var range: ByteRange { ByteRange(offset, offset + length) }
    }

    static let header: [UInt8] = Array("haul-journal-1\n".utf8) + [0]
    static let recordSize = 32
    /// The most a journal may hold: 2 million records, over 1 TiB of batches.
    static let sizeLimit = 64 << 20
    /// Records held before the file opens; past this the oldest are dropped (their bytes then count as
    /// unrecorded: a crash before the next checkpoint fetches them again).
    static let memoryLimit = 4096

    private enum Sink {
        /// Not yet worth a file.
        case memory([Record])
        /// Appending to this descriptor; `dirty` when something was appended since the last sync.
        case file(Int32, dirty: Bool)
        /// No journal (closed, or the file could not be opened): nothing is recorded.
        case off
    }

    private let sink: NIOLockedValueBox<Sink>

    init() {
        sink = NIOLockedValueBox(.memory([]))
    }

    deinit {
        close()
    }

    /// XXH3-64 of `bytes`.
    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        haul_xxh3(bytes.baseAddress, bytes.count)
    }

    /// Records `bytes`, just written at `offset`. `completing` says they are the file's last: while the
    /// records are still held in memory they are then not hashed, nor kept. The download goes on to its
    /// finish, which syncs and renames the part; the journal, if it opens before that, lacks the record,
    /// and a crash meanwhile fetches those bytes again. A small file, which ends before its journal would
    /// start, so never hashes its bytes (over 1 instruction a byte, a sixth of 1000 small downloads').
    func record(_ bytes: UnsafeRawBufferPointer, at offset: Int64, completing: Bool = false) {
        guard bytes.count > 0 else { return }
        if completing, sink.withLockedValue({ if case .memory = $0 { true } else { false } }) { return }
        // Hashed outside the lock: segments record in parallel.
        let record = Record(offset: offset, length: Int64(bytes.count), hash: Self.hash(bytes))
        sink.withLockedValue { sink in
            switch sink {
            case .memory(var records):
                sink = .off  // so that `records` is the only reference while it grows
                records.append(record)
                if records.count > Self.memoryLimit { records.removeFirst(records.count - Self.memoryLimit) }
                sink = .memory(records)
            case .file(let fd, _):
                try? FileIO.writeAll(fd, Self.encode([record]))
                sink = .file(fd, dirty: true)
            case .off:
                break
            }
        }
    }

    /// Whether the records go to a file now.
    var isOpen: Bool {
        sink.withLockedValue { if case .file = $0 { return true } else { return false } }
    }

    /// Starts the file `name` afresh in `directory` with `records` (or, when nil, the ones held in memory),
    /// and appends every later record to it. When the file cannot be opened (a link or a stranger's file
    /// there, a full disk), nothing more is recorded: the download goes on, as before journals.
    func open(_ name: String, in directory: OutputDirectory, with records: [Record]? = nil) {
        let fd = directory.openJournal(name)
        sink.withLockedValue { sink in
            if case .file(let old, _) = sink { Glibc.close(old) }
            guard let fd else {
                sink = .off
                return
            }
            var held: [Record] = []
            if case .memory(let kept) = sink { held = kept }
            if (try? FileIO.writeAll(fd, Self.header + Self.encode(records ?? held))) == nil {
                Glibc.close(fd)
                sink = .off
                return
            }
            sink = .file(fd, dirty: true)
        }
    }

    /// The download starts over from byte 0: what was recorded no longer describes the part.
    func reset() {
        sink.withLockedValue { sink in
            switch sink {
            case .memory: sink = .memory([])
            case .file(let fd, _):
                if ftruncate(fd, 0) == 0, (try? FileIO.writeAll(fd, Self.header)) != nil {
                    sink = .file(fd, dirty: true)
                } else {
                    Glibc.close(fd)
                    sink = .off
                }
            case .off: break
            }
        }
    }

    /// Makes the records so far durable (at a checkpoint, after the data's sync), so that `haul verify`
    /// finds a record for every durable byte even after a power loss.
    func sync() {
        sink.withLockedValue { sink in
            guard case .file(let fd, true) = sink else { return }
            _ = FileIO.sync(fd, dataOnly: true)
            sink = .file(fd, dirty: false)
        }
    }

    /// Stops recording and closes the file.
    func close() {
        sink.withLockedValue { sink in
            if case .file(let fd, _) = sink { Glibc.close(fd) }
            sink = .off
        }
    }

    // MARK: reading

    static func encode(_ records: [Record]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(records.count * recordSize)
        for record in records {
            var fields = [UInt64(bitPattern: record.offset).littleEndian, UInt64(bitPattern: record.length).littleEndian,
                          record.hash.littleEndian, 0]
            fields[3] = fields.withUnsafeBytes { Self.hash(UnsafeRawBufferPointer(rebasing: $0[..<24])) }.littleEndian
            fields.withUnsafeBytes { bytes.append(contentsOf: $0) }
        }
        return bytes
    }

    /// The records of a journal's bytes: those whose own check holds, in file order; nil when the bytes
    /// are not a journal (no header).
    static func decode(_ bytes: [UInt8]) -> [Record]? {
        guard bytes.count >= header.count, Array(bytes[..<header.count]) == header else { return nil }
        var records: [Record] = []
        var at = header.count
        while at + recordSize <= bytes.count {
            let fields = bytes[at..<(at + recordSize)].withUnsafeBytes { raw in
                (0..<4).map { UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self)) }
            }
            let check = bytes[at..<(at + 24)].withUnsafeBytes { Self.hash($0) }
            at += recordSize
            guard check == fields[3] else { continue }  // torn, or not ours
            let record = Record(offset: Int64(bitPattern: fields[0]), length: Int64(bitPattern: fields[1]), hash: fields[2])
            guard record.offset >= 0, record.length > 0, record.length <= 1 << 30 else { continue }
            records.append(record)
        }
        return records
    }

    /// Reads the journal `name`: its records, `[]` when there is none or it cannot be trusted (not a journal,
    /// too large, a link).
    static func load(_ name: String, in directory: OutputDirectory) -> [Record] {
        guard case .bytes(let bytes) = directory.readSmallFile(name, limit: sizeLimit) else { return [] }
        return decode(bytes) ?? []
    }

    /// What checking records against the part found.
    struct Check: Equatable {
        /// Records whose bytes the part still holds, and their ranges merged.
        var good: [Record] = []
        var goodRanges: [ByteRange] = []
        /// Records whose bytes differ or are missing (past the part's end), and their ranges merged.
        var damaged: [Record] = []
        var damagedRanges: [ByteRange] = []
    }

    /// Reads back each record's bytes from `fd` (of `size` bytes) and checks them; a record wholly inside
    /// `trusted` (durable ranges, when not asked to check everything) is taken as good without a read.
    static func check(_ records: [Record], against fd: Int32, size: Int64, trusted: [ByteRange] = []) -> Check {
        var result = Check()
        var buffer = [UInt8]()
        for record in records {
            let range = record.range
            let ok: Bool
            if trusted.contains(where: { $0.start <= range.start && range.end <= $0.end }) {
                ok = true
            } else if range.end > size {
                ok = false
            } else {
                if buffer.count < Int(record.length) { buffer = [UInt8](repeating: 0, count: Int(record.length)) }
                let read = (try? buffer.withUnsafeMutableBytes { raw in
                    Result { () throws(SystemError) in
                        try FileIO.readFully(fd, into: UnsafeMutableRawBufferPointer(rebasing: raw[..<Int(record.length)]),
                                             at: record.offset)
                    }
                }.get()) ?? -1
                ok = read == Int(record.length)
                    && buffer.withUnsafeBytes { hash(UnsafeRawBufferPointer(rebasing: $0[..<Int(record.length)])) } == record.hash
            }
            if ok { result.good.append(record) } else { result.damaged.append(record) }
        }
        // Merged once, not per record.
        result.goodRanges = ByteRange.merged(result.good.map(\.range))
        // A range both damaged in one record and good in a later one (fetched again) is good.
        result.damagedRanges = ByteRange.merged(result.damaged.map(\.range))
            .flatMap { ByteRange.subtract(result.goodRanges, from: $0) }
        return result
    }
}

extension ByteRange {
    /// What is left of `range` once `ranges` (sorted, merged) are taken out.
    static func subtract(_ ranges: [ByteRange], from range: ByteRange) -> [ByteRange] {
        var left: [ByteRange] = []
        var cursor = range.start
        for cut in ranges where cut.end > cursor && cut.start < range.end {
            if cut.start > cursor { left.append(ByteRange(cursor, cut.start)) }
            cursor = Swift.max(cursor, cut.end)
        }
        if cursor < range.end { left.append(ByteRange(cursor, range.end)) }
        return left
    }
}
