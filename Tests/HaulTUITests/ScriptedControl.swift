import HaulCore

/// A `DownloadControl` for the loop's tests: its events are the batches the test hands over (`feed`), its
/// commands do nothing, and with `neverIdle` its wait for idle ends only when the waiting task is cancelled.
final class ScriptedControl: DownloadControl {
    let (batches, feed) = AsyncStream.makeStream(of: [ManagerEvent].self)
    let (idle, never) = AsyncStream.makeStream(of: Void.self)
    let neverIdle: Bool
    let outlivesFrontEnd: Bool

    init(neverIdle: Bool = false, outlivesFrontEnd: Bool = false) {
        self.neverIdle = neverIdle
        self.outlivesFrontEnd = outlivesFrontEnd
    }

    func eventBatches() -> AsyncStream<[ManagerEvent]> { batches }
    func submit(_ jobs: [DownloadJob]) async {}
    func cancel(_ id: DownloadID) async {}
    func cancelAll() async {}
    func pause(_ id: DownloadID) async {}
    func resume(_ id: DownloadID) async {}
    func pauseAll() async {}
    func resumeAll() async {}
    func retry(_ id: DownloadID) async {}
    func remove(_ id: DownloadID) async {}
    func removeFiles(_ id: DownloadID, _ known: OwnFiles.Known?) async -> OwnFiles.Outcome? { nil }
    func move(_ id: DownloadID, _ place: QueuePlace) async {}
    func refresh(_ id: DownloadID, to url: String) async -> Result<Int64, HaulError> { .success(0) }
    func setLimit(_ id: DownloadID, _ bytesPerSecond: Int64?) async {}
    func setOverallLimit(_ bytesPerSecond: Int64?) async {}
    var overallLimit: Int64? { nil }
    /// Iterating an `AsyncStream` ends when the waiting task is cancelled: the loop cancels it as it leaves.
    func waitUntilIdle() async {
        guard neverIdle else { return }
        for await _ in idle {}
    }
    var exitCode: Int32 { 0 }
}
