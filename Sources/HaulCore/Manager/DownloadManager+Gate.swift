/// What the queue's time gate knows: whether the schedule's windows let downloads run, and the wall-clock time
/// a download's `--start-at` is compared with. The service sets it from its clock (`setTimeGate`); the manager
/// itself reads no clock.
package struct TimeGate: Sendable, Equatable {
    /// Inside a `schedule` window, or no windows at all.
    package var open = true
    /// Seconds since 1970 (UTC), as last told; a download whose `startAfter` is later waits.
    package var now = Double.infinity

    package init(open: Bool = true, now: Double = .infinity) {
        self.open = open
        self.now = now
    }

    /// Whether a download that waits for `startAfter` may start now, and if not, the state it waits in.
    package func hold(startAfter: Double?) -> DownloadState? {
        if !open { return .scheduled }
        if let startAfter, startAfter > now { return .scheduled }
        return nil
    }
}

extension DownloadManager {
    /// May this queued download start now; if not, the state it waits in instead. One question per gate, so
    /// that each gate on the queue stays a small decision of its own.
    func hold(_ entry: Entry) -> DownloadState? {
        timeGate.hold(startAfter: entry.job.startAfter)
    }

    /// Takes a download that may not start yet out of the running order: it waits, with its reason, until its
    /// gate opens (`setTimeGate`).
    func park(_ id: DownloadID, as waitsAs: DownloadState) {
        setState(id, waitsAs)
        held.append(id)
    }

    /// A download stopped for its window has ended its task: it waits for the next window, or, when one
    /// opened meanwhile, takes its turn again.
    func parkAgain(_ id: DownloadID, _ entry: Entry) {
        if hold(entry) != nil {
            held.append(id)
        } else {
            setState(entry, id, .queued)
            waiting.append(id)
        }
    }

    /// The service's clock says where the schedule stands. Closed: what runs stops, keeping its bytes, and
    /// waits as scheduled (a download already writing its finished file is left to finish); open, or past a
    /// download's `--start-at`: what waited for it is queued again, in queue order, ahead of what came since.
    package func setTimeGate(_ gate: TimeGate) {
        timeGate = gate
        if !gate.open {
            for id in order where running[id] != nil && !finishing.contains(id) && entries[id]?.stopIntent == nil {
                stop(id, as: .scheduled)
            }
        }
        var stillHeld: [DownloadID] = []
        var released: [DownloadID] = []
        var seen = Set<DownloadID>()
        for id in held where seen.insert(id).inserted {
            guard let entry = entries[id], entry.state == .scheduled else { continue }
            if running[id] != nil || hold(entry) != nil {
                // Still stopping (it re-parks itself when its task ends), or still before its time.
                if running[id] == nil { stillHeld.append(id) }
                continue
            }
            released.append(id)
        }
        held = stillHeld
        guard !released.isEmpty else { return }
        for id in released { setState(id, .queued) }
        waiting.replaceSubrange(waitingHead..<waitingHead, with: released)
        startWaiting()
    }

    /// The earliest `--start-at` still ahead of the gate's time among the downloads waiting for theirs: when
    /// the service should tell the gate again.
    package var nextStartAfter: Double? {
        held.compactMap { id -> Double? in
            guard let entry = entries[id], entry.state == .scheduled, let after = entry.job.startAfter,
                  after > timeGate.now else { return nil }
            return after
        }.min()
    }

    /// How many downloads wait for their time.
    package var scheduledCount: Int {
        held.count(where: { entries[$0]?.state == .scheduled })
    }
}
