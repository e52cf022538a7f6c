import Foundation
import HaulCore
import HaulServiceClient

/// What the service knows of every download right now, kept from the manager's events: `haul ls` reads
/// it, and a client that attaches gets it as a snapshot of events before the live ones.
struct Roster: Sendable {
    struct Entry: Sendable, Equatable {
        var id: DownloadID
        var url: String
        var directory: String
        var name: String
        var path: String?
        var state: DownloadState = .queued
        var completed: Int64 = 0
        var total: Int64?
        var rate: Double = 0
        /// When `rate` was measured (its last progress).
        var rateAt: ContinuousClock.Instant?
        var added: Date
        var seconds: Double?
        var fact: DownloadFact?
        /// Its own rate cap, from the `.limited` facts (kept apart from the last notice).
        var limit: Int64?
        /// Its aria2 GID.
        var gid: String
        /// Its `added` event has gone out to the clients. One the service has inserted but the manager has
        /// not told yet stays out of snapshots: a client attaching in that gap would otherwise get it both
        /// in its snapshot and live. (Downloads restored from the store are announced.)
        var announced = true
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

    mutating func apply(_ event: ManagerEvent, at now: ContinuousClock.Instant = .now) {
        switch event {
        case .added(let id, _, _):
            // Inserted by the service with what the event does not carry (directory, time); now told.
            entries[id]?.announced = true
        case .state(let id, let state):
            guard let before = entries[id]?.state else { return }
            active += Self.activeCount(state) - Self.activeCount(before)
            entries[id]?.state = state
            if state == .queued || state == .paused {
                wait(id)
            } else {
                stopWaiting(id)
            }
            if state.isFinished || state == .queued || state == .connecting { entries[id]?.rate = 0 }
            if state == .queued || state == .connecting { entries[id]?.seconds = nil }
        case .started(let id, let file, let path, let total, _):
            entries[id]?.name = file
            entries[id]?.path = path
            entries[id]?.total = total
        case .progress(let id, let progress):
            entries[id]?.completed = progress.completed
            if let total = progress.total { entries[id]?.total = total }
            entries[id]?.rate = progress.bytesPerSecond
            entries[id]?.rateAt = now
        case .fact(let id, .limited(let rate)):
            entries[id]?.limit = rate
        case .fact(let id, let fact):
            entries[id]?.fact = fact
            // What the part keeps, which an attempt that failed before its first progress never showed.
            if case .retrying(_, _, _, let resumeAt, _) = fact, let entry = entries[id], resumeAt > entry.completed {
                entries[id]?.completed = resumeAt
            }
        case .finished(let id, let result, let seconds):
            entries[id]?.name = result.file
            entries[id]?.path = result.path
            // `bytes` are this run's; a resumed file is bigger than that.
            if let entry = entries[id] {
                let size = entry.total ?? Swift.max(entry.completed, result.bytes)
                entries[id]?.completed = size
                entries[id]?.total = size
            }
            entries[id]?.seconds = seconds
        case .removed(let id):
            if let gid = entries[id]?.gid { ids[gid] = nil }
            active -= Self.activeCount(entries[id]?.state)
            entries[id] = nil
            order.removeAll { $0 == id }
            stopWaiting(id)
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
    func list(at now: ContinuousClock.Instant = .now) -> [Wire.Download] {
        order.compactMap { entries[$0].map { Self.download($0, at: now) } }
    }

    static func download(_ entry: Entry, at now: ContinuousClock.Instant = .now) -> Wire.Download {
        var failure: HaulError?
        if case .failed(let error) = entry.state { failure = error }
        return Wire.Download(
            id: entry.id, url: entry.url, file: entry.path ?? FilePath.join(entry.directory, entry.name),
            state: entry.state.name, completed: entry.completed, total: entry.total,
            speed: entry.speed(at: now), error: failure?.message,
            category: failure?.category.rawValue, added: ISO8601.string(entry.added), seconds: entry.seconds,
            fact: entry.fact, name: entry.name, gid: entry.gid)
    }

    /// The events that bring a new client's picture to what the roster holds.
    func snapshot() -> [ManagerEvent] {
        var events: [ManagerEvent] = []
        events.reserveCapacity(order.count * 3)
        for id in order {
            guard let entry = entries[id], entry.announced else { continue }
            events.append(.added(id: id, url: entry.url, file: entry.name))
            if let path = entry.path { events.append(.started(id: id, file: entry.name, path: path, total: entry.total)) }
            if entry.completed > 0 || entry.rate > 0 {
                events.append(.progress(id: id, DownloadProgress(completed: entry.completed, batchBytes: 0,
                                                                 total: entry.total, bytesPerSecond: entry.rate)))
            }
            if let fact = entry.fact { events.append(.fact(id: id, fact)) }
            if let limit = entry.limit { events.append(.fact(id: id, .limited(bytesPerSecond: limit))) }
            if entry.state == .done, let path = entry.path {
                events.append(.finished(id: id, DownloadResult(file: entry.name, path: path, bytes: entry.completed,
                                                               skipped: false), seconds: entry.seconds ?? 0))
            }
            if entry.state != .queued { events.append(.state(id: id, entry.state)) }
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

extension Roster.Entry {
    /// Its speed now: the last rate measured while it downloads, 0 once nothing has come for
    /// `quietAfter` (a stall, or the silence after a rate cap's burst, showed the last rate for half a minute).
    func speed(at now: ContinuousClock.Instant) -> Double {
        guard state == .downloading, let rateAt, rateAt.duration(to: now) < Self.quietAfter else { return 0 }
        return rate
    }

    static let quietAfter: Duration = .seconds(2)
}
