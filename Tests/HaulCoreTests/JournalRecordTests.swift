import TestSupport
import Testing
@testable import HaulCore

/// What the journal keeps of a download's writes: a record of every batch, except the file's last bytes
/// while the records are still held in memory. A download that ends that soon goes straight on to its
/// finish (sync and rename), so those records would never reach a file; hashing them was a sixth of the
/// instructions of 1000 small downloads.
@Suite struct JournalRecordTests {
    let clock = ManualClock()
    let first = [UInt8](repeating: 1, count: 8192)
    let last = [UInt8](repeating: 2, count: 4096)
    var total: Int64 { Int64(first.count + last.count) }

    func claim(in dir: TempDirectory) throws -> (OutputDirectory, PartFile) {
        let directory = try OutputDirectory(dir.path)
        guard case .created(let part) = try directory.claimPart("x.bin.part") else {
            throw HaulError(.other, "x.bin.part was not created")
        }
        return (directory, part)
    }

    func record(_ bytes: [UInt8], at offset: Int64) -> WriteJournal.Record {
        WriteJournal.Record(offset: offset, length: Int64(bytes.count),
                            hash: bytes.withUnsafeBytes { WriteJournal.hash($0) })
    }

    /// Streams `first` then `last` through an accumulator that expects the body to end at `end`, then opens
    /// the journal (as a download that ran past `recordAfter` would) and reads back what it holds.
    func journalAfterStreaming(end: Int64?) async throws -> [WriteJournal.Record] {
        let dir = TempDirectory()
        let (directory, part) = try claim(in: dir)
        let bytes = ScriptedBytes(steps: [(.zero, first), (.zero, last)], clock: clock)
        for try await _ in ByteAccumulator(bytes, writingTo: part, end: end, total: total, clock: clock) {}
        #expect(dir.contents("x.bin.part") == first + last)
        let journal = try #require(part.journal)
        journal.open("x.bin.part.journal", in: directory)
        return WriteJournal.load("x.bin.part.journal", in: directory)
    }

    @Test func aBodyThatEndsTheFileLeavesItsLastWriteUnhashedWhileRecordsAreInMemory() async throws {
        #expect(try await journalAfterStreaming(end: total) == [record(first, at: 0)])
    }

    @Test func aSegmentsBodyIsRecordedWhole() async throws {
        // A segment's accumulator is not told where the body ends: the file's other segments may still run.
        #expect(try await journalAfterStreaming(end: nil) == [record(first, at: 0), record(last, at: 8192)])
    }

    @Test func onceTheJournalIsAFileTheLastWriteIsRecordedToo() throws {
        let dir = TempDirectory()
        let (directory, part) = try claim(in: dir)
        try #require(part.journal).open("x.bin.part.journal", in: directory)
        try first.withUnsafeBytes { try part.write($0, at: 0) }
        try last.withUnsafeBytes { try part.write($0, at: 8192, completing: true) }
        #expect(WriteJournal.load("x.bin.part.journal", in: directory) == [record(first, at: 0), record(last, at: 8192)])
    }

    /// The records' checksum is XXH3-64 itself, whichever code computes it (the library's SIMD dispatch now,
    /// which takes a third of the instructions of its plain SSE2 entry point): a journal written by an
    /// earlier build still checks. The expected values are the reference implementation's (libxxhash's
    /// `XXH3_64bits`), for lengths on each of XXH3's paths: empty, short, mid-size, long with a partial
    /// stripe.
    @Test func theChecksumIsXXH3() {
        let pattern = (0..<(1 << 20) + 13).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let expected: [(Int, UInt64)] = [
            (0, 0x2d06_8005_38d3_94c2), (24, 0x4895_3b9e_46ea_32c5), (1000, 0x9897_65d0_ea7a_5ecd),
            ((1 << 20) + 13, 0xa87f_84d8_de16_3113),
        ]
        for (length, hash) in expected {
            let computed = pattern.withUnsafeBytes { all in
                WriteJournal.hash(UnsafeRawBufferPointer(rebasing: all[..<length]))
            }
            #expect(computed == hash)
        }
    }
}
