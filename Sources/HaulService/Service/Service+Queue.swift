import HaulCore
import HaulServiceClient

/// The waiting queue's order: `haul move`, and the aria2 face's `changePosition` and `position` arguments.
extension Service {
    /// Moves a queued or paused download to `place` in the waiting queue; its new position (from 0).
    func move(_ id: DownloadID, to place: QueuePlace) async -> Result<Int, Wire.Failure> {
        guard roster.contains(id) else { return .failure(Wire.Failure(error: "no download with id \(id)", unknown: [id])) }
        // What the manager did before the move is in the roster: the position is of the queue as it is.
        await settled()
        guard let position = roster.queue.position(of: id, place) else {
            let state = roster[id].map { " (it is \($0.state.name))" } ?? ""
            return .failure(Wire.Failure(error: "download \(id) is not waiting in the queue\(state); "
                                         + "only a queued or paused download moves"))
        }
        return .success(await moveWaiting(id, to: position) ?? position)
    }

    /// Moves waiting download `id` to `position` of the waiting queue (clamped), through the manager, so that
    /// the move reaches the roster, the store and the clients as an event among the others; where it went, or
    /// nil when it does not wait.
    @discardableResult
    func moveWaiting(_ id: DownloadID, to position: Int) async -> Int? {
        var queue = roster.queue
        guard let from = queue.position(of: id), let placed = queue.move(id, to: position) else { return nil }
        // Where it is already: nothing to tell, nothing to store.
        if placed == from { return placed }
        await manager.move(id, to: placed, order: queue.ids)
        await settled()
        return roster.queue.position(of: id) ?? placed
    }
}
