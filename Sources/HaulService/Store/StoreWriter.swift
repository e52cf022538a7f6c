import Foundation
import HaulCore

/// Puts the manager's events into the store: state changes, starts, results and removals at once;
/// progress at most once a second per download (100 downloads sending 10 progress events a second make
/// about 100 row writes a second, not 1000).
///
/// The latest progress of each download waits here until a second has passed since that download's last
/// progress write (its first is written at once); it is written before any other event of that download
/// (so a row never shows a state older than its bytes), and by `flush`. Between events, `flushDue` writes
/// what has waited long enough: call it on a one-second tick, and `flush` before the service stops. Progress
/// not yet written when the process dies is at most a second old, and the `.part` file holds the bytes.
///
/// A value owned by the one task that reads the manager's events.
struct StoreWriter: Sendable {
    static let progressInterval: Duration = .seconds(1)

    let store: Store
    /// The injected clock: progress is timed on it, and the writer's owner waits on it for the next flush.
    let clock: MomentClock
    /// Wall-clock time, for the rows' `started` and `finished`.
    let now: @Sendable () -> Date
    /// The latest progress not yet written, per download.
    private var pending: [DownloadID: DownloadProgress] = [:]
    /// When each download's progress was last written, as time since `clock`'s origin.
    private var lastProgressWrite: [DownloadID: Duration] = [:]
    /// Events of writes that failed because the file could not be written (read-only, full), with the time
    /// each happened at: written first, in order, by the next write that goes through.
    private var unwritten: [(events: [ManagerEvent], time: Date)] = []

    init(store: Store, clock: MomentClock, now: @escaping @Sendable () -> Date = ServiceClock.system.date) {
        self.store = store
        self.clock = clock
        self.now = now
    }

    init<C: Clock<Duration>>(store: Store, clock: C, now: @escaping @Sendable () -> Date = ServiceClock.system.date) {
        self.init(store: store, clock: MomentClock(clock), now: now)
    }

    /// How many downloads have progress waiting.
    var pendingCount: Int { pending.count }

    /// How many events wait for the file to be writable again.
    var unwrittenCount: Int { unwritten.reduce(0) { $0 + $1.events.count } }

    /// Whether anything waits to be written (progress, or the events of a failed write): a later `flushDue`
    /// writes it.
    var waiting: Bool { !pending.isEmpty || !unwritten.isEmpty }

    /// Writes `events` in one transaction, with the progress that is due. On an error nothing of it is
    /// written: the progress stays pending for a later write; the other events are kept for the next write
    /// when the file could not be written (`.readOnly`, `.diskFull`: they are facts the queue must hold once
    /// it can), and not kept on any other error (the caller reports the error).
    mutating func record(_ events: [ManagerEvent]) throws(StoreError) {
        try write(events, flushingAll: false)
    }

    /// Writes the progress that has waited a second or more.
    mutating func flushDue() throws(StoreError) {
        try write([], flushingAll: false)
    }

    /// Writes every pending progress now.
    mutating func flush() throws(StoreError) {
        try write([], flushingAll: true)
    }

    private mutating func write(_ events: [ManagerEvent], flushingAll: Bool) throws(StoreError) {
        let time = clock.now.sinceOrigin
        var pending = self.pending
        var lastWrite = lastProgressWrite
        // What stays pending if the write fails: the latest progress of each download, written or not.
        var latest = self.pending
        var batch: [ManagerEvent] = []

        func flushPending(_ id: DownloadID) {
            if let progress = pending.removeValue(forKey: id) {
                batch.append(.progress(id: id, progress))
                lastWrite[id] = time
            }
        }

        for event in events {
            switch event {
            case .progress(let id, let progress):
                pending[id] = progress
                latest[id] = progress
            case .fact(let id, .filesRemoved), .fact(let id, .category):
                // The facts the row keeps: its history says "removed with files", and its category.
                flushPending(id)
                batch.append(event)
            case .added, .fact, .sources:
                // Nothing to write: `Store.insert` stored the download; facts and sources' tallies are not kept.
                break
            case .state(let id, _), .started(let id, _, _, _, _), .finished(let id, _, _):
                flushPending(id)
                batch.append(event)
            case .removed(let id):
                pending[id] = nil
                latest[id] = nil
                lastWrite[id] = nil
                batch.append(event)
            case .moved:
                batch.append(event)
            }
        }
        for id in pending.keys.sorted() {
            let due = flushingAll || lastWrite[id].map { time - $0 >= Self.progressInterval } ?? true
            if due { flushPending(id) }
        }

        let happened = now()
        do {
            try store.apply(unwritten + [(batch, happened)])
        } catch {
            self.pending = latest
            if error.kind == .readOnly || error.kind == .diskFull {
                let facts = batch.filter { if case .progress = $0 { false } else { true } }
                if !facts.isEmpty { unwritten.append((facts, happened)) }
            } else {
                unwritten = []
            }
            throw error
        }
        unwritten = []
        self.pending = pending
        lastProgressWrite = lastWrite
    }
}
