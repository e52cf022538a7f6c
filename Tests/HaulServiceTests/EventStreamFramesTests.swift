import HaulCore
import HaulServiceClient
import NIOCore
import Testing
@testable import HaulService

/// `GET /v1/events` as bytes: what a batch of events becomes, and how it is cut into writes.
@Suite struct EventStreamFramesTests {
    static func event(_ n: Int) -> ManagerEvent {
        .progress(id: n, DownloadProgress(completed: Int64(n), batchBytes: 1, total: 100, bytesPerSecond: 0))
    }

    static func text(_ writes: [ByteBuffer]) -> [String] {
        writes.map { String(buffer: $0) }
    }

    static func frame(_ n: Int) -> String {
        "data: " + String(decoding: event(n).json(with: Wire.encoder()), as: UTF8.self) + "\n\n"
    }

    /// What came while the last write was under way goes out in one write (it was a write an event: 7000
    /// for 1000 small files, and as many wake-ups of the client).
    @Test func aBatchOfLiveEventsIsOneWrite() {
        var frames = EventStreamFrames(snapshot: 0)
        let first = Self.text(frames.writes(for: (0..<5).map(Self.event)))
        #expect(first == [": live\n\n" + (0..<5).map(Self.frame).joined()])
        let next = Self.text(frames.writes(for: (5..<50).map(Self.event)))
        #expect(next == [(5..<50).map(Self.frame).joined()])
    }

    /// The snapshot ends with `: live`, right after its last event, whatever the batch holds after it.
    @Test func theSnapshotEndsWithTheLiveMarker() {
        var frames = EventStreamFrames(snapshot: 3)
        let writes = Self.text(frames.writes(for: (0..<5).map(Self.event)))
        #expect(writes == [(0..<3).map(Self.frame).joined() + ": live\n\n" + (3..<5).map(Self.frame).joined()])
        #expect(Self.text(frames.writes(for: [Self.event(5)])) == [Self.frame(5)])
    }

    /// A big queue's snapshot goes out in writes of about `writeSize`, every byte once, in order.
    @Test func aLongBatchIsCutIntoWritesOfAboutTheWriteSize() {
        let count = 3000
        var frames = EventStreamFrames(snapshot: count)
        let writes = frames.writes(for: (0..<count).map(Self.event))
        #expect(writes.count > 2)
        for write in writes.dropLast() {
            #expect(write.readableBytes >= EventStreamFrames.writeSize)
            #expect(write.readableBytes < EventStreamFrames.writeSize + 512)
        }
        #expect(Self.text(writes).joined() == (0..<count).map(Self.frame).joined() + ": live\n\n")
    }
}
