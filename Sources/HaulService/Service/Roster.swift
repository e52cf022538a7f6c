import Foundation
import HaulCore
import HaulServiceClient

/// What the service knows of every download right now, kept from the manager's events: `haul ls` reads
/// it, and a client that attaches gets it as a snapshot of events before the live ones.
struct Roster: Sendable {
    /// One download: its record (reached through as its own fields: `entry.state`), and what only the service
    /// keeps beside it.
    @dynamicMemberLookup
    struct Entry: Sendable, Equatable {
        var record: DownloadRecord
        /// The output directory: where its file goes until the server has named it.
        var directory: String
        var added: Date
        /// Its aria2 GID.
        var gid: String
        /// The addresses of its sources (passwords masked) as its job gives them, when it has more than one;
        /// empty for a download from one (its `url`). What `ls` and the aria2 face show until the engine
        /// reports the sources (`record.sources`).
        var sources: [String] = []
        /// Its `added` event has gone out to the clients. One the service has inserted but the manager has
        /// not told yet stays out of snapshots: a client attaching in that gap would otherwise get it both
        /// in its snapshot and live. (Downloads restored from the store are announced.)
        var announced = true

        init(_ record: DownloadRecord, directory: String, added: Date, gid: String, announced: Bool = true) {
            self.record = record
            self.directory = directory
            self.added = added
            self.gid = gid
            self.announced = announced
        }

        subscript<T>(dynamicMember path: WritableKeyPath<DownloadRecord, T>) -> T {
            get { record[keyPath: path] }
            set { record[keyPath: path] = newValue }
        }
    }

    private(set) var entries: [DownloadID: Entry] = [:]
    /// Ids, oldest first.
    private(set) var order: [DownloadID] = []
    /// Each download's id by its GID.
    private(set) var ids: [String: DownloadID] = [:]
    /// aria2's waiting list: the queued and paused downloads, in the order a client arranged them
    /// (`changePosition`), new ones last.
    private(set) var waiting: [DownloadID] = []
    /// The ids in `waiting`: asked at every state event, which with thousands queued made each a walk of
    /// the list.
    private var waitingIDs: Set<DownloadID> = []

    private mutating func wait(_ id: DownloadID) {
        if waitingIDs.insert(id).inserted { waiting.append(id) }
    }

    /// Takes `id` off the waiting list; downloads leave it mostly from its front, where the search ends.
    private mutating func stopWaiting(_ id: DownloadID) {
        guard waitingIDs.remove(id) != nil, let index = waiting.firstIndex(of: id) else { return }
        waiting.remove(at: index)
    }

    var count: Int { entries.count }

    /// Queued or running. Kept as entries come, change state and go: the service asks at each state event
    /// whether it is idle, and counting then walked (and copied) every entry, 2000 downloads' worth of
    /// entries for each of their thousands of events.
    private(set) var active = 0

    /// What a download in `state` (none: nil) adds to `active`.
    private static func activeCount(_ state: DownloadState?) -> Int {
        guard let state else { return 0 }
        return state.isFinished ? 0 : 1
    }

    /// Room for `count` more downloads (an add of a long list), so that inserting them grows nothing.
    mutating func reserve(_ count: Int) {
        entries.reserveCapacity(entries.count + count)
        ids.reserveCapacity(ids.count + count)
        order.reserveCapacity(order.count + count)
    }

    mutating func insert(_ entry: Entry) {
        active += Self.activeCount(entry.state) - Self.activeCount(entries[entry.id]?.state)
        ids[entry.gid] = entry.id
        if entry.state == .queued || entry.state == .paused { wait(entry.id) }
        if entries[entry.id] == nil {
            // Ids only grow: appending keeps the order, and restored rows arrive oldest first.
            if let last = order.last, last > entry.id {
                order.insert(entry.id, at: order.firstIndex { $0 > entry.id } ?? order.endIndex)
            } else {
                order.append(entry.id)
            }
        }
        entries[entry.id] = entry
    }

    func contains(_ id: DownloadID) -> Bool { entries[id] != nil }

    subscript(id: DownloadID) -> Entry? { entries[id] }

    /// Applies `event`, which came at `now`: the record's own rules (`DownloadRecord.apply`), and the roster's
    /// lists (the waiting list, the count of active downloads, the GIDs).
    mutating func apply(_ event: ManagerEvent, at now: Moment) {
        switch event {
        case .added(let id, _, _):
            // Inserted by the service with what the event does not carry (directory, time); now told.
            entries[id]?.announced = true
        case .state(let id, let state):
            guard let before = entries[id]?.state else { return }
            active += Self.activeCount(state) - Self.activeCount(before)
            entries[id]?.record.apply(event, at: now)
            if state == .queued || state == .paused {
                wait(id)
            } else {
                stopWaiting(id)
            }
        case .removed(let id):
            if let gid = entries[id]?.gid { ids[gid] = nil }
            active -= Self.activeCount(entries[id]?.state)
            entries[id] = nil
            order.removeAll { $0 == id }
            stopWaiting(id)
        case .started(let id, _, _, _, _), .progress(let id, _), .fact(let id, _), .sources(let id, _),
            .finished(let id, _, _):
            entries[id]?.record.apply(event, at: now)
        }
    }

    /// Changes what the roster knows of one download (its directory or name, after `changeOption`).
    mutating func modify(_ id: DownloadID, _ change: (inout Entry) -> Void) {
        guard var entry = entries[id] else { return }
        let before = entry.state
        change(&entry)
        active += Self.activeCount(entry.state) - Self.activeCount(before)
        entries[id] = entry
    }

    /// Moves a waiting download to `position` of the waiting list (clamped); returns where it went.
    mutating func move(_ id: DownloadID, to position: Int) -> Int? {
        guard let from = waiting.firstIndex(of: id) else { return nil }
        waiting.remove(at: from)
        let to = Swift.min(Swift.max(0, position), waiting.count)
        waiting.insert(id, at: to)
        return to
    }

    /// Every download, oldest first, as `ls` shows it.
    func list(at now: Moment) -> [Wire.Download] {
        order.compactMap { entries[$0].map { Self.download($0, at: now) } }
    }

    static func download(_ entry: Entry, at now: Moment) -> Wire.Download {
        var failure: HaulError?
        if case .failed(let error) = entry.state { failure = error }
        return Wire.Download(
            id: entry.id, url: entry.url, file: entry.path ?? FilePath.join(entry.directory, entry.name),
            state: entry.state.name, completed: entry.completed, total: entry.total,
            speed: entry.record.speed(at: now), error: failure?.message,
            category: failure?.category.rawValue, added: ISO8601.string(entry.added), seconds: entry.seconds,
            fact: entry.fact, name: entry.name, gid: entry.gid, sources: sources(of: entry),
            reason: failure?.reason?.rawValue)
    }

    /// The masked addresses of `job`'s sources, when it has more than one (`Entry.sources`).
    static func sourceURLs(of job: DownloadJob) -> [String] {
        job.sources.count > 1 ? job.sources.map { URLRedaction.masked($0.url) } : []
    }

    /// Each source of a download from several, as `ls` shows it: as the engine last reported them, else the
    /// job's, each waiting with nothing brought. nil for a download from one.
    static func sources(of entry: Entry) -> [Wire.Download.Source]? {
        guard entry.sources.count > 1 || entry.record.sources.count > 1 else { return nil }
        if !entry.record.sources.isEmpty { return entry.record.sources.map(Wire.Download.Source.init) }
        return entry.sources.map { Wire.Download.Source(SourceStatus(url: $0)) }
    }

    /// The events that bring a new client's picture to what the roster holds.
    func snapshot() -> [ManagerEvent] {
        var events: [ManagerEvent] = []
        events.reserveCapacity(order.count * 3)
        for id in order {
            guard let entry = entries[id], entry.announced else { continue }
            events += entry.record.replay
        }
        return events
    }
}

/// Times as ISO 8601, UTC, to the second: `2026-11-23T22:48:04Z`.
enum ISO8601 {
    static func string(_ date: Date) -> String {
        date.ISO8601Format()
    }
}
