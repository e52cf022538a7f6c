/// The loop every fetch runs its bytes through: reports each batch's progress, starts the claim's journal
/// once `record` has passed (a quick download never writes one), and checkpoints the claim (fsync + state
/// file) once `first` has passed, then every `interval`, which bounds what a power loss can cost.
/// One connection feeds it the accumulator's batches; a segmented fetch, its workers' ranges.
struct ProgressLoop<C: Clock<Duration>> {
    let clock: C
    /// From the start of the loop to the first checkpoint.
    let first: Duration
    let interval: Duration
    /// From the start of the loop to the journal's start.
    let record: Duration

    /// Runs `elements` to their end. `step` turns each into the progress to report and the range a
    /// checkpoint adds to the resume state (nil: `step` keeps the state itself), or into nil for one with no
    /// bytes to report.
    func run<S: AsyncSequence>(_ elements: S, claim: inout Claim, events: (DownloadEvent) -> Void,
                               step: (S.Element, inout Claim) -> (progress: DownloadProgress, adding: ByteRange?)?)
        async throws
    {
        var due = clock.now.advanced(by: first)
        var recordDue: C.Instant? = clock.now.advanced(by: record)
        for try await element in elements {
            guard let batch = step(element, &claim) else { continue }
            events(.progress(batch.progress))
            let now = clock.now
            if let start = recordDue, now >= start {
                try claim.startRecording()
                recordDue = nil
            }
            if now >= due {
                try claim.checkpointUnlessDiskFull(adding: batch.adding)
                due = now.advanced(by: interval)
            }
        }
    }
}
