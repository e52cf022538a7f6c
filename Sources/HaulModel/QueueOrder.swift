/// Where `haul move`, the screen's `K`/`J`/`T`/`B` and aria2's `changePosition` put a waiting download.
package enum QueuePlace: String, Sendable, Equatable, CaseIterable, Codable {
    case top, up, down, bottom
}

/// The waiting queue: the queued and paused downloads, in the order queued ones start. The service keeps
/// one (its roster: `haul move`, aria2's `tellWaiting` and `changePosition`), and an attached screen keeps
/// another from the same events, so both hold the same order without the list ever crossing the socket:
/// a download that starts waiting goes last (added, or retried),
/// one that stopped running (paused, or queued again when the service stops) goes first, since it was the
/// next to run and has bytes on disk already, and `moved` says where a move put one.
package struct QueueOrder: Sendable, Equatable {
    package private(set) var ids: [DownloadID] = []
    /// The ids in `ids`: asked at every state event, which with thousands queued made each a walk of the list.
    private var members: Set<DownloadID> = []

    package init() {}

    package var count: Int { ids.count }

    package func contains(_ id: DownloadID) -> Bool { members.contains(id) }

    package func position(of id: DownloadID) -> Int? {
        members.contains(id) ? ids.firstIndex(of: id) : nil
    }

    /// Whether a download in `state` is in the waiting queue: queued, paused, or held back by the schedule
    /// (`scheduled`) or by the disk (`no space`), each of which starts by itself in its turn.
    package static func waits(_ state: DownloadState) -> Bool {
        switch state {
        case .queued, .paused, .scheduled, .noSpace: true
        case .connecting, .downloading, .done, .failed, .cancelled: false
        }
    }

    /// Puts `id` last, unless it is there already.
    package mutating func append(_ id: DownloadID) {
        if members.insert(id).inserted { ids.append(id) }
    }

    /// Takes `id` out. Downloads leave mostly from the front, where the search ends, or right after they came
    /// (a snapshot's finished download is added, then says it is done).
    package mutating func remove(_ id: DownloadID) {
        guard members.remove(id) != nil else { return }
        if ids.last == id {
            ids.removeLast()
        } else if let index = ids.firstIndex(of: id) {
            ids.remove(at: index)
        }
    }

    /// What `event` does to the queue; `before` is the download's state before it.
    package mutating func apply(_ event: ManagerEvent, before: DownloadState?) {
        switch event {
        case .added(let id, _, _):
            // A new download is queued (or paused at once, which keeps it here).
            append(id)
        case .state(let id, let state):
            if !Self.waits(state) {
                remove(id)
            } else if !members.contains(id) {
                if before?.isActive == true {
                    members.insert(id)
                    ids.insert(id, at: 0)
                } else {
                    append(id)
                }
            }
        case .removed(let id):
            remove(id)
        case .moved(let id, let position):
            move(id, to: position)
        case .started, .progress, .fact, .sources, .finished:
            break
        }
    }

    /// Moves `id` to `position` (clamped to the queue); where it went, or nil when it does not wait.
    @discardableResult
    package mutating func move(_ id: DownloadID, to position: Int) -> Int? {
        guard let from = self.position(of: id) else { return nil }
        let to = Swift.min(Swift.max(0, position), ids.count - 1)
        guard to != from else { return to }
        ids.remove(at: from)
        ids.insert(id, at: to)
        return to
    }

    /// The position `place` means for `id`, or nil when it does not wait.
    package func position(of id: DownloadID, _ place: QueuePlace) -> Int? {
        guard let from = position(of: id) else { return nil }
        switch place {
        case .top: return 0
        case .up: return Swift.max(0, from - 1)
        case .down: return Swift.min(ids.count - 1, from + 1)
        case .bottom: return ids.count - 1
        }
    }
}
