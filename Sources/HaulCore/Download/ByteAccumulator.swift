import NIOConcurrencyHelpers

/// Reads a transfer's byte batches, writes each to the part file at its offset as it arrives, and
/// yields one `Progress` per accumulated batch.
///
/// A batch is complete when it holds about 1/100 of the expected size (at least 64 KiB), or when the time
/// window (100 ms) since the previous progress has passed, whichever comes first; the end of the stream
/// completes the last one. So a tiny file reports once, a huge one about a hundred times plus once per
/// window while it is slow, and the reader (a progress bar, a JSON line) sees smooth progress either way.
struct ByteAccumulator<Base: AsyncSequence, C: Clock>: AsyncSequence
where Base.Element: ByteChunk, C.Duration == Duration {
    typealias Element = DownloadProgress

    let base: Base
    let file: PartFile
    let startOffset: Int64
    /// The file offset just past the last byte this body may hold (nil: unknown, until the stream ends).
    let endOffset: Int64?
    let total: Int64?
    let clock: C
    let window: Duration
    /// Told the offset past the last byte written, after every write (reports come in batches: a body that
    /// fails between two still has what it wrote checkpointed).
    let written: WrittenMark?
    /// Nothing else writes to the file while this stream does (a body over one connection, not a segment): a
    /// body written in one go then goes direct through the file's own descriptor (`PartFile.write`).
    let alone: Bool

    /// - Parameters:
    ///   - startOffset: the file offset of the stream's first byte (non-zero when resuming).
    ///   - endOffset: where the body must end (the range or size the server announced): a byte past it is
    ///     never written, and its arrival fails the stream with a `.protocol` error.
    ///   - total: the size of the whole file, when known; sets the batch size.
    ///   - alone: nothing else writes to `file` until this stream ends.
    package init(_ base: Base, writingTo file: PartFile, startingAt startOffset: Int64 = 0, end endOffset: Int64? = nil,
                total: Int64?, clock: C, window: Duration = .milliseconds(100), written: WrittenMark? = nil,
                alone: Bool = false) {
        self.written = written
        self.alone = alone
        self.base = base
        self.file = file
        self.startOffset = startOffset
        self.endOffset = endOffset
        self.total = total
        self.clock = clock
        self.window = window
    }

    func completes(at offset: Int64) -> Bool {
        BodyWrite.completes(at: offset, end: endOffset, total: total)
    }

    /// The byte count that completes a batch: 1/100 of the file, at least 64 KiB.
    static func batchSize(total: Int64?) -> Int64 {
        Swift.max(64 * 1024, (total ?? 0) / 100)
    }

    func makeAsyncIterator() -> Iterator {
        Iterator(base: base.makeAsyncIterator(), owner: self)
    }

    package struct Iterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let owner: ByteAccumulator
        var offset: Int64
        var pending: Int64 = 0
        var lastReport: C.Instant
        let origin: C.Instant
        var meter = RateMeter()
        var done = false

        init(base: Base.AsyncIterator, owner: ByteAccumulator) {
            self.base = base
            self.owner = owner
            self.offset = owner.startOffset
            self.origin = owner.clock.now
            self.lastReport = origin
            meter.record(bytes: offset, at: 0)
        }

        mutating func next() async throws -> DownloadProgress? {
            guard !done else { return nil }
            let threshold = ByteAccumulator.batchSize(total: owner.total)
            while let chunk = try await base.next() {
                if let end = owner.endOffset, offset + Int64(chunk.count) > end {
                    throw BodyWrite.overflow(announced: end - owner.startOffset)
                }
                let reached = offset + Int64(chunk.count)
                try owner.file.write(chunk, at: offset, completing: owner.completes(at: reached),
                                     alone: owner.alone)
                offset = reached
                owner.written?.advance(to: offset)
                pending += Int64(chunk.count)
                let now = owner.clock.now
                if pending >= threshold || lastReport.duration(to: now) >= owner.window {
                    return report(at: now)
                }
            }
            done = true
            return pending > 0 || offset == owner.startOffset ? report(at: owner.clock.now) : nil
        }

        private mutating func report(at now: C.Instant) -> DownloadProgress {
            meter.record(bytes: offset, at: origin.duration(to: now).seconds)
            lastReport = now
            defer { pending = 0 }
            return DownloadProgress(completed: offset, batchBytes: pending, total: owner.total,
                            bytesPerSecond: meter.bytesPerSecond)
        }
    }
}

/// The rules a body's bytes are written by, whichever way they come: through `ByteAccumulator`, or all at
/// once from memory (`Downloader`, for a body that had all come before its head was handed over).
enum BodyWrite {
    /// Whether a write that ends at `offset` completes the whole file (the body, ending at `end`, ends
    /// where the file does). A segment's body never says so: the file's other segments may still be under way.
    static func completes(at offset: Int64, end: Int64?, total: Int64?) -> Bool {
        total != nil && end == total && offset == total
    }

    /// The failure of a body that brings more than the `announced` bytes (none past them is written).
    static func overflow(announced: Int64) -> HaulError {
        HaulError(.protocol, "the server sent more than the \(announced) bytes it announced")
    }
}

/// Where a body's writes have reached: set by the accumulator after each write, read by the fetch that
/// checkpoints when the body fails.
final class WrittenMark: Sendable {
    private let end: NIOLockedValueBox<Int64>

    init(_ start: Int64) {
        end = NIOLockedValueBox(start)
    }

    func advance(to offset: Int64) {
        end.withLockedValue { $0 = Swift.max($0, offset) }
    }

    var offset: Int64 { end.withLockedValue { $0 } }
}
