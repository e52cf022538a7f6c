extension DownloadManager {
    /// How a queue that waits for room (the service's) looks again: on `clock`, every `interval`, besides each
    /// time a download ends or is removed. Without one (a plain run), a download that does not fit fails.
    package struct RoomWatch: Sendable {
        package var clock: MomentClock
        package var interval: Duration

        package init(clock: MomentClock, interval: Duration = .seconds(30)) {
            self.clock = clock
            self.interval = interval
        }
    }

    /// Whether `error` makes the download wait for room rather than fail: a queue with a `RoomWatch`, and a
    /// download that did not fit before its first byte (`noRoom`) or that filled the disk (`diskFull`, its part
    /// kept to resume). It then waits as `noSpace`, the error its reason, and is looked at again later.
    func waitForRoom(_ id: DownloadID, _ entry: Entry, _ error: HaulError) -> Bool {
        guard roomWatch != nil, error.category == .fileIO else { return false }
        switch error.reason {
        case .noRoom, .diskFull: break
        default: return false
        }
        setState(entry, id, .noSpace(error))
        roomWaiters.append(id)
        watchRoom()
        return true
    }

    /// Puts back at the head of the queue, in their order, the downloads waiting for room that fit now: what
    /// each still needs (`noRoom`'s bytes; `Room.unknownNeed` for one that filled the disk) against its file
    /// system's free space less what the running downloads and those put back before it still need. One that
    /// still does not fit at its start (the space went meanwhile) waits again.
    func checkRoom() {
        guard !roomWaiters.isEmpty else { return }
        var planned: [UInt64: Int64] = [:]
        var back: [DownloadID] = []
        roomWaiters.removeAll { id in
            guard let entry = entries[id], case .noSpace(let why) = entry.state else { return true }
            guard running[id] == nil else { return false }
            var needed = Room.unknownNeed
            if case .noRoom(let bytes) = why.reason { needed = bytes }
            if let free = downloader.room.free(in: entry.job.outputDirectory) {
                let device = free.space.device
                guard needed <= free.space.available - free.held - planned[device, default: 0] else { return false }
                planned[device, default: 0] += needed
            }
            setState(entry, id, .queued)
            back.append(id)
            return true
        }
        guard !back.isEmpty else { return }
        waiting.insert(contentsOf: back, at: waitingHead)
        startWaiting()
    }

    /// Starts the periodic look (`RoomWatch.interval`) unless it runs; it ends once nothing waits for room.
    private func watchRoom() {
        guard let watch = roomWatch, roomTimer == nil else { return }
        roomTimer = Task { [weak self] in
            while true {
                do { try await watch.clock.sleep(for: watch.interval) } catch { return }
                guard let self, await self.roomTimerFired() else { return }
            }
        }
    }

    /// The periodic look; false (and the timer gone) once nothing waits for room.
    private func roomTimerFired() -> Bool {
        checkRoom()
        roomWaiters.removeAll { !(entries[$0]?.state.isWaitingForRoom ?? false) }
        if roomWaiters.isEmpty { roomTimer = nil }
        return roomTimer != nil
    }
}
