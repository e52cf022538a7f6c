import Foundation
import Testing
@testable import HaulCore
@testable import HaulService
import TestSupport

/// The store's rows are records: the same events make the same facts in a row as in the roster's entry
/// (`DownloadRecord.apply`), however the events fall into transactions.
@Suite struct StoreRecordTests {
    static let reset = HaulError(.network, "connection reset by peer", reason: .connectionLost)

    static let runs: [[ManagerEvent]] = [
        // The category that placed it is kept with the row (issue 75), beside its last fact.
        [.state(id: 1, .connecting), .fact(id: 1, .category(name: "video", directory: "/d")),
         .started(id: 1, file: "a.bin", path: "/d/a.bin", total: nil, part: "2049:7"),
         .state(id: 1, .downloading),
         .progress(id: 1, DownloadProgress(completed: 3000, batchBytes: 10, total: nil, bytesPerSecond: 9))],
        // A retry's resume offset raises what the row says (the part keeps it).
        [.fact(id: 1, .retrying(attempt: 1, of: 5, delaySeconds: 1, resumeAt: 4096, reason: reset))],
        [.progress(id: 1, DownloadProgress(completed: 5000, batchBytes: 10, total: nil, bytesPerSecond: 9))],
        // A resumed run's bytes are not the file's.
        [.finished(id: 1, DownloadResult(file: "a.bin", path: "/d/a.bin", bytes: 1000, skipped: false), seconds: 2),
         .state(id: 1, .done)],
        // A new run forgets the last one's time.
        [.state(id: 1, .queued)],
    ]

    /// What a row keeps of a record: not the live things (the rate, the last fact, a retry's wait; the cap is
    /// the job's).
    static func kept(_ record: DownloadRecord) -> DownloadRecord {
        var kept = record
        kept.rate = 0
        kept.rateAt = nil
        kept.fact = nil
        kept.waitingToRetry = false
        kept.limit = nil
        return kept
    }

    @Test(arguments: [false, true]) func aRowIsTheRecordOfItsEvents(oneTransaction: Bool) throws {
        let dir = TempDirectory()
        let store = try Store(directory: dir.path)
        defer { try? store.close() }
        let id = try store.insert(StoreFixtures.job("a.bin"), file: "a.bin", added: StoreFixtures.time(0))
        #expect(id == 1)
        var record = DownloadRecord(id: 1, url: StoreFixtures.job("a.bin").url, name: "a.bin")
        for (index, run) in Self.runs.enumerated() {
            for event in run { record.apply(event, at: .origin) }
            if !oneTransaction {
                try store.apply(run, at: StoreFixtures.time(Double(index)))
                let row = try #require(try store.find(1))
                #expect(row.record == Self.kept(record), "after run \(index)")
            }
        }
        if oneTransaction {
            try store.apply(Self.runs.enumerated().map { ($0.element, StoreFixtures.time(Double($0.offset))) })
            #expect(try store.find(1)?.record == Self.kept(record))
        }
        #expect(record.completed == 5000 && record.total == 5000 && record.state == .queued && record.seconds == nil)
        #expect(try store.find(1)?.record.category == "video")
    }
}
