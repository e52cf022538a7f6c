/// The curl thread's bookkeeping of transfers that wait before they start, and of the connections opened ahead
/// that some of them wait for (`CurlDriver.start(_:clock:openingAhead:)`, `start(_:clock:after:)`), per origin.
/// Its state is `DriverLoop`'s `openedAhead`, `aheadRunning`, `waitingForAhead` and `following`.
extension DriverLoop {
    /// Opens `connections` to the origin of `core`'s request ahead of need, as HEADs on connections of their
    /// own, once per origin while earlier ones may still be cached. Their stall timeout runs on `core`'s clock
    /// (its download's), as `core`'s own does.
    func openAhead(beside core: TransferCore, connections: Int) {
        let request = core.request
        let now = TransferInstant.now
        let origin = CurlDriver.origin(of: request)
        if let last = openedAhead[origin], last.duration(to: now) < CurlDriver.aheadMemory { return }
        openedAhead = openedAhead.filter { $0.value.duration(to: now) < CurlDriver.aheadMemory }
        openedAhead[origin] = now
        var head = HTTPRequest(url: request.url, method: .head, options: request.options)
        head.headers = request.headers
        head.ownConnection = true
        aheadRunning[origin, default: 0] += connections
        for _ in 0..<connections {
            add(TransferCore(request: head, driver: driver, activityClock: core.activityClock), ahead: true)
        }
    }

    /// Whether `core` waits for a connection opened ahead instead of opening one: it is on a connection of its
    /// own, and HEADs opened ahead to its origin still run. If so, it is queued.
    func waitsForAhead(_ core: TransferCore) -> Bool {
        guard !aheadRunning.isEmpty, core.request.ownConnection else { return false }
        let origin = CurlDriver.origin(of: core.request)
        guard aheadRunning[origin] != nil else { return false }
        waitingForAhead[origin, default: []].append((core, TransferInstant.now))
        driver.observer?(ObjectIdentifier(core), .waitsForAConnectionOpenedAhead)
        return true
    }

    /// Starts the transfers that waited too long for a connection opened ahead.
    func startOverdue() {
        guard !waitingForAhead.isEmpty else { return }
        let now = TransferInstant.now
        for (origin, var waiting) in waitingForAhead {
            // They queue in the order they came: the overdue ones are the first.
            let overdue = waiting.prefix { $0.since.duration(to: now) >= driver.aheadPatience }
            guard !overdue.isEmpty else { continue }
            waiting.removeFirst(overdue.count)
            waitingForAhead[origin] = waiting.isEmpty ? nil : waiting
            for (core, _) in overdue { add(core, waited: true) }
        }
    }

    /// A HEAD opened ahead to `origin` ended: its connection, if the server kept it, waits in the cache for
    /// the first transfer waiting for one (all of them once no HEAD is left).
    func aheadEnded(_ origin: String) {
        let left = (aheadRunning[origin] ?? 1) - 1
        aheadRunning[origin] = left > 0 ? left : nil
        guard var waiting = waitingForAhead.removeValue(forKey: origin) else { return }
        let starting = left > 0 ? [waiting.removeFirst()] : waiting
        if left > 0, !waiting.isEmpty { waitingForAhead[origin] = waiting }
        for (core, _) in starting { add(core, waited: true) }
    }

    /// Starts `core` once `previous` has ended, or at once when `previous` is no longer running or waiting.
    func follow(_ core: TransferCore, after previous: TransferCore) {
        let key = ObjectIdentifier(previous)
        let running = byTransfer[key] != nil || waitingForAhead.values.contains { $0.contains { $0.core === previous } }
            || following.values.contains { $0 === previous }
        if running {
            following[key] = core
            driver.observer?(ObjectIdentifier(core), .waitsForTheTransferBefore)
        } else {
            add(core)
        }
    }

    /// Cancels a transfer that has no easy handle yet: one that waits for a connection opened ahead or for
    /// another transfer to end. One that is in neither has ended already.
    func withdraw(_ core: TransferCore) {
        if let origin = waitingForAhead.first(where: { $0.value.contains { $0.core === core } })?.key {
            waitingForAhead[origin]?.removeAll { $0.core === core }
            if waitingForAhead[origin]?.isEmpty == true { waitingForAhead[origin] = nil }
            end(core, error: HaulError(.cancelled, "cancelled"))
        } else if let key = following.first(where: { $0.value === core })?.key {
            following[key] = nil
            end(core, error: HaulError(.cancelled, "cancelled"))
        }
    }

    /// Ends every transfer that waits (the driver stops): those waiting for a connection opened ahead first,
    /// then those waiting for another transfer to end.
    func endWaiting(error: HaulError) {
        for (core, _) in waitingForAhead.values.joined() { end(core, error: error) }
        waitingForAhead = [:]
        for core in following.values { end(core, error: error) }
        following = [:]
    }

    /// Ends a transfer that never got an easy handle.
    func end(_ core: TransferCore, error: HaulError) {
        core.finish(error)
        core.markClosed()
        driver.observer?(ObjectIdentifier(core), .closed)
        startFollower(of: core, after: error)
    }

    /// Starts the transfer that waited for `core` to end, if one did; when `core` failed (or was cancelled, or
    /// refitted), that one ends unstarted, cancelled, and its reader asks again if it still wants the bytes.
    func startFollower(of core: TransferCore, after error: HaulError?) {
        guard let next = following.removeValue(forKey: ObjectIdentifier(core)) else { return }
        if error == nil {
            add(next)
        } else {
            end(next, error: HaulError(.cancelled, "the transfer it was to follow ended early"))
        }
    }
}
