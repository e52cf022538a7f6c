import HaulCore

/// The service's downloads, driven through its socket: what the TUI holds when it is attached. Commands go
/// as requests; events come from the service's stream, the snapshot first. A command that fails (the
/// service went away) is reported on the event stream's end, not per key.
package struct RemoteControl: DownloadControl {
    let client: ServiceClient

    package init(client: ServiceClient) {
        self.client = client
    }

    package func eventBatches() -> AsyncStream<[ManagerEvent]> {
        client.events { part in
            guard case .events(let batch) = part else { return nil }
            return batch
        }
    }

    package func submit(_ jobs: [DownloadJob]) async {
        _ = try? await client.add(jobs)
    }

    package func cancel(_ id: DownloadID) async { await send("cancel", Wire.Selection(ids: [id])) }
    package func cancelAll() async { await send("cancel", Wire.Selection(all: true)) }
    package func pause(_ id: DownloadID) async { await send("pause", Wire.Selection(ids: [id])) }
    package func resume(_ id: DownloadID) async { await send("resume", Wire.Selection(ids: [id])) }
    /// Returns once every paused download has checkpointed and let go of its `.part` (quitting with `p`).
    package func pauseAll() async { await send("pause", Wire.Selection(all: true, wait: true)) }
    package func resumeAll() async { await send("resume", Wire.Selection(all: true)) }
    package func retry(_ id: DownloadID) async { await send("retry", Wire.Selection(ids: [id])) }
    package func remove(_ id: DownloadID) async { await send("remove", Wire.Selection(ids: [id])) }
    package func move(_ id: DownloadID, _ place: QueuePlace) async { _ = try? await client.move(id, to: place) }

    /// The service judges what is haul's by its own record of the download, not by what the screen knows.
    package func removeFiles(_ id: DownloadID, _ known: OwnFiles.Known?) async -> OwnFiles.Outcome? {
        guard case .success(let removal)? = try? await client.removeFiles(Wire.Selection(ids: [id])) else { return nil }
        var outcome = OwnFiles.Outcome()
        outcome.removed = removal.removed.map { ($0.path, $0.bytes) }
        outcome.left = removal.left.map { ($0.path, $0.reason) }
        outcome.failed = removal.failed.map { ($0.path, $0.reason) }
        return outcome
    }

    package func refresh(_ id: DownloadID, to url: String) async -> Result<Int64, HaulError> {
        do throws(HaulError) {
            return try await client.refresh(id, to: url).map(\.kept).mapError { HaulError(.usage, $0.error) }
        } catch {
            return .failure(error)
        }
    }

    package func setLimit(_ id: DownloadID, _ bytesPerSecond: Int64?) async {
        try? await client.setLimit([id], bytesPerSecond)
    }

    package func setOverallLimit(_ bytesPerSecond: Int64?) async {
        try? await client.setLimit(bytesPerSecond)
    }

    package var overallLimit: Int64? {
        get async { (try? await client.status())?.limit }
    }

    package var schedule: ScheduleStatus? {
        get async { (try? await client.status())?.schedule }
    }

    /// The downloads are the service's: nothing of this process to wait for.
    package func waitUntilIdle() async {}

    /// Detaching is a success, whatever the downloads did.
    package var exitCode: Int32 { 0 }

    package var outlivesFrontEnd: Bool { true }

    private func send(_ verb: String, _ selection: Wire.Selection) async {
        _ = try? await client.perform(verb, selection)
    }
}
