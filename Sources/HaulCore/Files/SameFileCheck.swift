import FoundationEssentials
import Glibc

/// Whether a new address serves the file whose bytes a stopped download holds (`haul refresh`, `--refresh-with`,
/// aria2's `changeUri`), and, when it does, the part's resume state rewritten for that address.
///
/// One request proves it: a `Range` request for a block the part already holds. The answer's size must be the
/// part's known total (a different size is always another file); an equal strong ETag is proof on its own, a
/// different one is not a refusal by itself (a CDN's edges tag one file differently); and the block's bytes
/// must be the part's: compared with the XXH3 the checksum journal recorded for them where it has a record
/// inside the durable ranges, else with the bytes read back from the `.part`. The state then names the new
/// address and its validators (so the resume's `If-Range` is the new server's), replaced atomically while the
/// part is held (`flock`): no download writes it meanwhile.
struct SameFileCheck {
    /// The block compared when the journal has no record of one: 64 KiB, or the first completed range if shorter.
    static let blockSize: Int64 = 64 << 10
    /// The longest journal record taken as the block: past this the block is read from the part instead.
    static let longestRecord: Int64 = 4 << 20

    let driver: CurlDriver
    let clock: any Clock<Duration>

    /// What the check found.
    enum Outcome: Equatable, Sendable {
        /// The new address serves the file: the state names it now, and the next run continues from `kept`
        /// bytes on disk.
        case same(kept: Int64)
        /// Nothing on disk to keep (no part, or no resume state): the next run starts from the new address.
        case nothingKept
    }

    /// Checks `url` against the part of `job` named `name` in the job's directory; with `rewrite`, the part's
    /// state then names `url` and its validators (the address the download continues from). Throws a `.usage` error for
    /// another file (one line: "URL serves another file: 1000 bytes, not 2000"), the request's own error when
    /// the address cannot be asked, and a `.fileIO` one when the part is in use or cannot be read.
    func check(_ url: String, for job: DownloadJob, name: String, rewrite: Bool = true) async throws(HaulError) -> Outcome {
        let directory = try OutputDirectory(job.outputDirectory, below: job.confinedTo)
        let partName = name + ".part"
        guard directory.exists(partName) else { return .nothingKept }
        let part: PartFile
        switch try directory.claimPart(partName) {
        case .created(let created):
            // It went between the look and the claim (a finished download renamed it): nothing to keep.
            try? created.close()
            directory.remove(partName)
            return .nothingKept
        case .existing(let existing): part = existing
        case .busy: throw HaulError(.fileIO, "\(directory.file(partName)) is in use by a running download; pause it first")
        case .untrusted(let why): throw HaulError(.fileIO, "\(directory.file(partName)) \(why.phrase); not reading it")
        }
        defer { try? part.close() }
        let stateName = ResumeState.path(forPart: partName)
        guard case .found(let state) = ResumeState.load(from: directory, name: stateName) else { return .nothingKept }
        let shown = URLRedaction.masked(url)
        let block = Self.block(of: state, journal: WriteJournal.load(Claim.journalName(forPart: partName), in: directory))
        let answer = try await fetch(url, job: job, range: block.range)
        if let total = state.total, answer.total != total {
            let size = answer.total.map { "\($0) bytes" } ?? "no size"
            throw HaulError(.usage, "\(shown) serves another file: \(size), not \(total)")
        }
        if let range = block.range {
            let same: Bool
            if let hash = block.hash {
                same = answer.bytes.count == Int(range.count)
                    && answer.bytes.withUnsafeBytes { WriteJournal.hash($0) } == hash
            } else {
                same = try Self.partHolds(answer.bytes, at: range, in: part)
            }
            guard same else {
                throw HaulError(.usage, "\(shown) serves another file: other bytes at \(range.start)-\(range.end - 1)")
            }
        }
        guard rewrite else { return .same(kept: state.completedBytes) }
        var renewed = ResumeState(url: url, etag: answer.etag, lastModified: answer.lastModified, total: state.total,
                                  completed: state.completed)
        renewed.version = state.version
        try renewed.save(to: directory, name: stateName)
        return .same(kept: state.completedBytes)
    }

    /// The block to compare: the first journal record that lies within the durable ranges (its hash is known),
    /// else the first `blockSize` bytes of the first completed range; no range when nothing is completed (only
    /// the size is compared then).
    static func block(of state: ResumeState, journal: [WriteJournal.Record]) -> (range: ByteRange?, hash: UInt64?) {
        let durable = state.completed
        if let record = journal.first(where: { record in
            record.length <= longestRecord
                && durable.contains { $0.start <= record.range.start && record.range.end <= $0.end }
        }) {
            return (record.range, record.hash)
        }
        guard let first = durable.first else { return (nil, nil) }
        return (ByteRange(first.start, first.start + Swift.min(first.count, blockSize)), nil)
    }

    /// What the new address answered.
    struct Answer {
        var total: Int64?
        var etag: String?
        var lastModified: String?
        var bytes: [UInt8]
    }

    /// Asks `url` for `range` (or its first byte, for the size alone) with the job's headers and options.
    private func fetch(_ url: String, job: DownloadJob, range: ByteRange?) async throws(HaulError) -> Answer {
        let shown = URLRedaction.masked(url)
        var request = HTTPRequest(url: url, options: job.transfer)
        request.headers = job.headers
        request.range = range.map { ($0.start, $0.end - 1) } ?? (0, 0)
        let clock = self.clock
        let transfer = Self.start(request, driver: driver, clock: clock)
        defer { transfer.cancel() }
        let head: ResponseHead
        do { head = try await transfer.head() } catch { throw HaulError.from(error) }
        if head.status == 416 {
            // The block lies past the end of what the address serves: a shorter file, whose size this says.
            return Answer(total: head.unsatisfiedRangeTotal, etag: nil, lastModified: nil, bytes: [])
        }
        do {
            try HTTPStatus.check(head)
        } catch {
            var told = error
            told.message = "\(shown): \(error.message)"
            throw told
        }
        guard head.status == 206 else {
            throw HaulError(.server, "\(shown) does not answer Range requests: the bytes on disk cannot continue from it")
        }
        let placement = try ResponseCheck.placement(of: head, asked: request.range, knownTotal: nil)
        var answer = Answer(total: placement.total, etag: head[.eTag], lastModified: head[.lastModified], bytes: [])
        guard range != nil else { return answer }
        let wanted = Int((placement.end ?? placement.start) - placement.start)
        answer.bytes.reserveCapacity(wanted)
        do {
            while answer.bytes.count < wanted, let batch = try await transfer.core.next(recycling: IOBuffer?.none) {
                batch.withUnsafeBytes { answer.bytes.append(contentsOf: $0.prefix(wanted - answer.bytes.count)) }
            }
        } catch {
            throw HaulError.from(error)
        }
        return answer
    }

    /// The request, its stall measured on `clock` (opened: the driver takes a concrete clock).
    private static func start<C: Clock<Duration>>(_ request: HTTPRequest, driver: CurlDriver, clock: C) -> Transfer {
        driver.start(request, clock: clock)
    }

    /// Whether the part holds `bytes` at `range`.
    private static func partHolds(_ bytes: [UInt8], at range: ByteRange, in part: PartFile) throws(HaulError) -> Bool {
        guard bytes.count == Int(range.count) else { return false }
        var held = [UInt8](repeating: 0, count: bytes.count)
        let read = try part.withDescriptor { (fd) throws(HaulError) -> Int in
            do { return try FileIO.readFully(fd, into: &held, at: range.start) } catch {
                throw HaulError(.fileIO, "cannot read \(part.path): \(error)")
            }
        }
        return read == bytes.count && held == bytes
    }
}
