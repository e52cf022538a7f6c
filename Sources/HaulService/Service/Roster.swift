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
        /// The metalink download whose answer listed this one's file (its job's `followedFrom`), and the
        /// downloads made of this one's metalink: aria2's `following` and `followedBy`.
        var following: DownloadID?
        var followedBy: [DownloadID] = []

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
    /// The waiting queue (the queued and paused downloads) in the order queued ones start: aria2's waiting
    /// list, and what `haul move` and `changePosition` arrange.
    private(set) var queue = QueueOrder()
    var waiting: [DownloadID] { queue.ids }

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
        if QueueOrder.waits(entry.state) { queue.append(entry.id) }
        if entries[entry.id] == nil {
            // Ids only grow: appending keeps the order, and restored rows arrive oldest first.
            if let last = order.last, last > entry.id {
                order.insert(entry.id, at: order.firstIndex { $0 > entry.id } ?? order.endIndex)
            } else {
                order.append(entry.id)
            }
        }
        entries[entry.id] = entry
        if let metalink = entry.following, entries[metalink]?.followedBy.contains(entry.id) == false {
            entries[metalink]?.followedBy.append(entry.id)
        }
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
            queue.apply(event, before: before)
        case .removed(let id):
            if let gid = entries[id]?.gid { ids[gid] = nil }
            active -= Self.activeCount(entries[id]?.state)
            entries[id] = nil
            order.removeAll { $0 == id }
            queue.remove(id)
        case .moved:
            queue.apply(event, before: nil)
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

    /// Restored downloads that wait, in the order they waited in (the store's), replacing the order they were
    /// inserted in (their ids').
    mutating func arrangeQueue(_ ids: [DownloadID]) {
        var arranged = QueueOrder()
        for id in ids where queue.contains(id) { arranged.append(id) }
        for id in queue.ids { arranged.append(id) }
        queue = arranged
    }

    /// Every download, oldest first, as `ls` shows it.
    func list(at now: Moment) -> [Wire.Download] {
        order.compactMap { entries[$0].map { Self.download($0, at: now) } }
    }

    static func download(_ entry: Entry, at now: Moment) -> Wire.Download {
        let failure = entry.state.error
        var download = Wire.Download(
            id: entry.id, url: entry.url, file: entry.path ?? FilePath.join(entry.directory, entry.name),
            state: entry.state.name, completed: entry.completed, total: entry.total,
            speed: entry.record.speed(at: now), error: failure?.message,
            category: failure?.category.rawValue, added: ISO8601.string(entry.added), seconds: entry.seconds,
            fact: entry.fact, name: entry.name, gid: entry.gid, sources: sources(of: entry),
            reason: failure?.reason?.rawValue)
        download.removedWithFiles = entry.filesRemoved != nil
        download.fileCategory = entry.record.category
        return download
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

    /// The `moved` events that turn the waiting queue a client builds from a snapshot (the waiting downloads in
    /// the order of their ids) into this one: none for a queue never rearranged.
    private func queueMoves() -> [ManagerEvent] {
        let target = queue.ids.filter { entries[$0]?.announced == true }
        var client = order.filter { queue.contains($0) && entries[$0]?.announced == true }
        var moves: [ManagerEvent] = []
        for (index, id) in target.enumerated() where client[index] != id {
            guard let from = client[index...].firstIndex(of: id) else { continue }
            client.remove(at: from)
            client.insert(id, at: index)
            moves.append(.moved(id: id, position: index))
        }
        return moves
    }

    /// The events that bring a new client's picture to what the roster holds.
    func snapshot() -> [ManagerEvent] {
        var events: [ManagerEvent] = []
        events.reserveCapacity(order.count * 3)
        for id in order {
            guard let entry = entries[id], entry.announced else { continue }
            events += entry.record.replay
        }
        events += queueMoves()
        return events
    }
}

/// Times as ISO 8601, UTC, to the second: `2026-11-23T22:48:04Z`.
enum ISO8601 {
    static func string(_ date: Date) -> String {
        date.ISO8601Format()
    }
}
