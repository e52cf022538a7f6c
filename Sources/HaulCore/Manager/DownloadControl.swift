/// What a front end drives: the manager in this process, or the service's through its socket. The TUI
/// does not know which; its `update` sees the same `ManagerEvent`s either way.
package protocol DownloadControl: Sendable {
    /// The events, once: the snapshot of what there is (attached to a service), then each as it happens,
    /// in batches (what came together: one read from the service's socket, or what a batched manager
    /// made while the last batch was taken), so that the front end wakes and draws once a batch.
    func eventBatches() -> AsyncStream<[ManagerEvent]>
    /// Adds downloads to the queue, together (to a service, in one request).
    func submit(_ jobs: [DownloadJob]) async
    func cancel(_ id: DownloadID) async
    func cancelAll() async
    func pause(_ id: DownloadID) async
    func resume(_ id: DownloadID) async
    func pauseAll() async
    func resumeAll() async
    func retry(_ id: DownloadID) async
    func remove(_ id: DownloadID) async
    /// `rm --files`: stops the download, deletes what haul wrote for it (`known`: what the front end knows of
    /// it; the service judges by its own record instead), and keeps its row, "removed with files". What
    /// happened to each file; nil when it could not be asked (an unknown id, the service gone).
    func removeFiles(_ id: DownloadID, _ known: OwnFiles.Known?) async -> OwnFiles.Outcome?

    /// Moves a queued or paused download in the waiting queue; the move comes back as a `moved` event.
    func move(_ id: DownloadID, _ place: QueuePlace) async
    /// Gives a paused or failed download a new address that serves the same file; it continues from its bytes
    /// on disk (how many it keeps), or the line that says why not.
    func refresh(_ id: DownloadID, to url: String) async -> Result<Int64, HaulError>
    /// One download's own cap (bytes per second, nil = none), at once; it lasts for its later runs.
    func setLimit(_ id: DownloadID, _ bytesPerSecond: Int64?) async
    /// The overall receive cap (bytes per second, nil = none), at once for what runs.
    func setOverallLimit(_ bytesPerSecond: Int64?) async
    /// The overall receive cap now.
    var overallLimit: Int64? { get async }
    /// Where the service's schedule stands; nil without one (and in a process of its own).
    var schedule: ScheduleStatus? { get async }
    /// Returns when what this front end is responsible for has stopped: every task of an in-process
    /// manager; nothing for a client of the service, whose downloads are the service's.
    func waitUntilIdle() async
    /// The process's exit code when the front end ends.
    var exitCode: Int32 { get async }
    /// Downloads keep going without this front end (a client of the service): quitting detaches.
    var outlivesFrontEnd: Bool { get }
}

extension DownloadManager: DownloadControl {
    package nonisolated func eventBatches() -> AsyncStream<[ManagerEvent]> {
        if let batches { return AsyncStream(unfolding: { await batches.next() }) }
        let events = self.events
        return AsyncStream { continuation in
            let reader = Task {
                for await event in events { continuation.yield([event]) }
                continuation.finish()
            }
            continuation.onTermination = { _ in reader.cancel() }
        }
    }

    package func submit(_ jobs: [DownloadJob]) async {
        _ = add(jobs)
    }

    package func setOverallLimit(_ bytesPerSecond: Int64?) async {
        setOverallReceiveLimit(bytesPerSecond)
    }

    package func setLimit(_ id: DownloadID, _ bytesPerSecond: Int64?) async {
        setReceiveLimit(id, bytesPerSecond)
    }

    package nonisolated var outlivesFrontEnd: Bool { false }
}

extension DownloadControl {
    /// A front end's own manager has no schedule: the service keeps it.
    package var schedule: ScheduleStatus? {
        get async { nil }
    }
}
