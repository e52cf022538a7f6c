import HaulModel
import Testing

/// The rules every face of a download shares, each written once in `DownloadRecord.apply`: the service's
/// roster, the store's rows, the screen's rows and the line front ends' tally are records changed by it.
@Suite struct DownloadRecordTests {
    static func record(_ events: [ManagerEvent], at now: Moment = .origin) -> DownloadRecord {
        var record = DownloadRecord(id: 1, url: "http://h/a.bin", name: "a.bin")
        for event in events { record.apply(event, at: now) }
        return record
    }

    static func progress(_ completed: Int64, total: Int64? = nil, rate: Double = 100) -> ManagerEvent {
        .progress(id: 1, DownloadProgress(completed: completed, batchBytes: 10, total: total, bytesPerSecond: rate))
    }

    static func finished(bytes: Int64, seconds: Double = 2) -> ManagerEvent {
        .finished(id: 1, DownloadResult(file: "a (1).bin", path: "/d/a (1).bin", bytes: bytes, skipped: false),
                  seconds: seconds)
    }

    static let reset = HaulError(.network, "connection reset by peer", reason: .connectionLost)

    static func retrying(resumeAt: Int64) -> ManagerEvent {
        .fact(id: 1, .retrying(attempt: 1, of: 5, delaySeconds: 1, resumeAt: resumeAt, reason: reset))
    }

    /// A finished download's completed bytes are its size: the known total, else the larger of what was seen
    /// and what this run brought (a resumed run brings less than the file holds).
    @Test func aFinishedDownloadsCompletedBytesAreItsSize() {
        let known = Self.record([.started(id: 1, file: "a.bin", path: "/d/a.bin", total: 1000), Self.progress(900),
                                 Self.finished(bytes: 400)])
        #expect(known.completed == 1000 && known.total == 1000)
        let resumed = Self.record([Self.progress(900), Self.finished(bytes: 400)])
        #expect(resumed.completed == 900 && resumed.total == 900, "a resumed run's bytes are not the file's")
        let whole = Self.record([Self.progress(300), Self.finished(bytes: 700)])
        #expect(whole.completed == 700 && whole.total == 700)
        #expect(whole.name == "a (1).bin" && whole.path == "/d/a (1).bin" && whole.seconds == 2)
        #expect(whole.rate == 0 && whole.rateAt == nil)
    }

    /// A retry's resume offset is what the part keeps: it raises what the record says, never lowers it, and the
    /// record waits to retry until the next attempt brings bytes.
    /// A new address given to a stopped download (`haul refresh`, `u`, `changeUri`, `--refresh-with`) is the one
    /// every face shows from then on, and what a client attaching later is told (the TUI's row kept the old one).
    @Test func aRefreshedDownloadShowsItsNewAddress() {
        let record = Self.record([Self.progress(900), .fact(id: 1, .refreshed(url: "http://mirror/a.bin?sig=***", kept: 900))])
        #expect(record.url == "http://mirror/a.bin?sig=***")
        #expect(record.replay.first == .added(id: 1, url: "http://mirror/a.bin?sig=***", file: "a.bin"))
        #expect(Self.record([.fact(id: 2, .refreshed(url: "http://other/", kept: 0))]).url == "http://h/a.bin")
    }

    @Test func aRetrysResumeOffsetRaisesCompleted() {
        var record = Self.record([Self.retrying(resumeAt: 4096)])
        #expect(record.completed == 4096 && record.waitingToRetry)
        record.apply(Self.progress(9000), at: .origin)
        #expect(!record.waitingToRetry)
        record.apply(Self.retrying(resumeAt: 8192), at: .origin)
        #expect(record.completed == 9000, "never less than it said")
        record.apply(.state(id: 1, .failed(Self.reset)), at: .origin)
        #expect(!record.waitingToRetry, "a failure ends the wait")
    }

    /// The speed to show: the last rate while it downloads, 0 once nothing came for `quietAfter`, and 0 in any
    /// other state.
    @Test func aQuietDownloadsSpeedIsZero() {
        let start = Moment(.seconds(100))
        var record = Self.record([.state(id: 1, .downloading)])
        record.apply(Self.progress(100, rate: 300), at: start)
        #expect(record.speed(at: start) == 300)
        #expect(record.speed(at: start + .milliseconds(1999)) == 300)
        #expect(record.speed(at: start + DownloadRecord.quietAfter) == 0)
        record.apply(Self.progress(200, rate: 250), at: start + .seconds(5))
        #expect(record.speed(at: start + .seconds(6)) == 250)
        record.apply(.state(id: 1, .paused), at: start + .seconds(6))
        #expect(record.speed(at: start + .seconds(6)) == 0 && record.rate == 0)
    }

    /// A new run forgets the last run's time and rate; the cap is kept apart from the last fact.
    @Test func aNewRunAndACapChangeWhatTheyShould() {
        var record = Self.record([Self.progress(300), Self.finished(bytes: 300), .state(id: 1, .done)])
        #expect(record.seconds == 2)
        record.apply(.state(id: 1, .queued), at: .origin)
        #expect(record.seconds == nil)
        record.apply(.fact(id: 1, .previewSaved(path: "/d/a.partial.jpg")), at: .origin)
        record.apply(.fact(id: 1, .limited(bytesPerSecond: 1024)), at: .origin)
        #expect(record.limit == 1024 && record.fact == .previewSaved(path: "/d/a.partial.jpg"))
    }

    /// Another download's events, and `added`/`removed` (its holder's to act on), change nothing.
    @Test func otherEventsChangeNothing() {
        let before = Self.record([Self.progress(300)])
        var after = before
        for event: ManagerEvent in [.progress(id: 2, DownloadProgress(completed: 9, batchBytes: 9, total: 9, bytesPerSecond: 9)),
                                    .state(id: 2, .done), .added(id: 1, url: "x", file: "y"), .removed(id: 1)] {
            after.apply(event, at: .origin)
        }
        #expect(after == before)
    }

    /// What a client attaching gets: the events that rebuild the record (its rate's moment aside).
    @Test(arguments: [
        [ManagerEvent](),
        [.state(id: 1, .connecting), .started(id: 1, file: "a.bin", path: "/d/a.bin", total: 1000, part: "2049:7"),
         .state(id: 1, .downloading), progress(500, total: 1000, rate: 250)],
        [progress(300), retrying(resumeAt: 4096), .fact(id: 1, .limited(bytesPerSecond: 2048))],
        [.started(id: 1, file: "a.bin", path: "/d/a.bin", total: nil), progress(700), finished(bytes: 700), .state(id: 1, .done)],
        [progress(10), .state(id: 1, .failed(reset))],
        // The category that placed the file, kept apart from the last fact.
        [.fact(id: 1, .category(name: "video", directory: "/v")),
         .started(id: 1, file: "a.mp4", path: "/v/a.mp4", total: nil), .fact(id: 1, .split(connections: 4))],
    ])
    func theReplayRebuildsTheRecord(events: [ManagerEvent]) throws {
        let original = Self.record(events)
        var copy = try #require(DownloadRecord(original.replay[0]))
        for event in original.replay.dropFirst() { copy.apply(event, at: .origin) }
        #expect(copy == original)
    }
}
