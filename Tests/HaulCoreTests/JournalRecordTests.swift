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
}
