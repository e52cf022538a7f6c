/// A download from several sources, over its one connection (or its probe): when the source the attempt asks
/// fails, the next one takes over from the bytes on disk, once it shows it serves the same file.
extension Downloader {
    /// Whether `error` is the source's (its answer, its connection), which another source may make good; not
    /// the disk's, the user's or a cancel.
    static func isSourceFailure(_ error: HaulError) -> Bool {
        switch error.category {
        case .network, .server, .protocol, .tls, .authentication: true
        default: false
        }
    }

    /// The attempt's source failed with `error`: it is marked failed (and said), and the next usable source
    /// becomes the one asked. False when `error` is not the source's or no source is left (the attempt fails).
    func failOver(_ error: HaulError, _ execution: inout Execution, events: (DownloadEvent) -> Void) -> Bool {
        guard let pool = execution.sources, !Task.isCancelled, Self.isSourceFailure(error) else { return false }
        let failed = pool.primary
        if pool.fail(failed, error) {
            events(.fact(.sourceFailed(url: URLRedaction.masked(pool.url(of: failed)), reason: error)))
        }
        let next = pool.nextPrimary()
        events(.sources(pool.statusesNow()))
        return next != nil
    }

    /// `.stream` over one connection from several sources: as `receive`, the body's bytes counted to the
    /// source asked (what the part gained, whether the body ends whole or fails), and the sources reported.
    func receiveCounted<C: Clock<Duration>>(_ body: DownloadStateMachine.Body, _ execution: inout Execution,
                                            clock: C, events: (DownloadEvent) -> Void)
        async throws(HaulError) -> DownloadStateMachine.Action
    {
        guard let pool = execution.sources else { preconditionFailure("counted with one source") }
        let before = execution.claim.state?.completedBytes ?? 0
        let primary = pool.primary
        pool.connection(to: primary, true)
        events(.sources(pool.statusesNow()))
        defer {
            pool.add(bytes: Swift.max(0, (execution.claim.state?.completedBytes ?? 0) - before), from: primary)
            pool.connection(to: primary, false)
            events(.sources(pool.statusesNow()))
        }
        return try await receive(body, &execution, clock: clock, events: events)
    }

    /// What follows the attempt's failure with `error` from several sources: while the failure is its source's
    /// and another source is left, that one takes over from the bytes on disk, once it agrees with them (no
    /// retry spent, no wait; a source that fails or disagrees there hands over to the next); else the
    /// machine is told of the failure (a retry, or the end).
    func failedOver<C: Clock<Duration>>(_ error: any Error, _ execution: inout Execution, clock: C,
                                        events: (DownloadEvent) -> Void) async -> DownloadStateMachine.Action {
        var failure = HaulError.from(error)
        while failOver(failure, &execution, events: events) {
            do {
                // Before the machine words its request: the validator it sends is the new source's.
                try await agreeWithPart(&execution, clock: clock, events: events)
                return execution.machine.sourceChanged(resume: execution.claim.state)
            } catch {
                failure = error
            }
        }
        return execution.machine.failed(failure, cancelled: Task.isCancelled, resume: execution.claim.state)
    }

    /// The URL the attempt's requests go to: the primary source's.
    func primaryURL(_ execution: Execution) -> String {
        execution.sources.map { $0.url(of: $0.primary) } ?? execution.job.url
    }

    /// Before a source other than the first one continues the part: its answer for bytes the part holds must be
    /// the same size and the same bytes; its validators then take the part's (what `If-Range` pins the rest
    /// to). One that disagrees is dropped and the attempt's error says so; one that fails throws its error.
    func agreeWithPart<C: Clock<Duration>>(_ execution: inout Execution, clock: C,
                                           events: (DownloadEvent) -> Void) async throws(HaulError) {
        guard let pool = execution.sources, pool.needsAgreement(pool.primary) else { return }
        let source = pool.primary
        guard let state = execution.claim.state, let window = Self.window(in: state) else {
            // Nothing on disk to compare with: its own first answer starts the part.
            pool.agreed(source, etag: nil, lastModified: nil)
            return
        }
        let job = execution.job
        var request = HTTPRequest(url: pool.url(of: source), options: job.transfer)
        request.headers = job.headers
        request.ownConnection = execution.ownConnection
        request.range = (window.start, window.end - 1)
        let transfer = driver.start(request, clock: clock)
        defer { transfer.cancel() }
        let head: ResponseHead
        var bytes: [UInt8] = []
        do {
            head = try await transfer.head()
            try HTTPStatus.check(head)
            let stated = head.status == 206 ? head.contentRange?.total : head.contentLength
            if let expected = state.total, let stated, stated != expected {
                throw dropped(source, .otherSize(size: stated, expected: expected), pool: pool, events: events)
            }
            guard head.status == 206 else {
                throw HaulError(.protocol, "answered \(head.status) to a Range request", httpStatus: head.status)
            }
            _ = try ResponseCheck.placement(of: head, asked: request.range, knownTotal: state.total)
            for try await batch in transfer.bytes { batch.withUnsafeBytes { bytes.append(contentsOf: $0) } }
        } catch {
            throw HaulError.from(error)
        }
        let disk = SourceLedger.read(execution.claim.part, window) ?? []
        if let differs = SourceLedger.firstDifference(disk, bytes) {
            throw dropped(source, .otherBytes(offset: window.start + Int64(differs)), pool: pool, events: events)
        }
        execution.claim.state?.etag = head[.eTag]
        execution.claim.state?.lastModified = head[.lastModified]
        pool.agreed(source, etag: head[.eTag], lastModified: head[.lastModified])
    }

    /// `source` is dropped (said), and the error its attempt ends with.
    private func dropped(_ source: Int, _ mismatch: SourceMismatch, pool: SourcePool,
                         events: (DownloadEvent) -> Void) -> HaulError {
        if pool.drop(source, mismatch) {
            events(.fact(.sourceDropped(url: URLRedaction.masked(pool.url(of: source)), reason: mismatch)))
        }
        return HaulError(.protocol, mismatch.phrase)
    }

    /// The bytes a new source is checked against: up to 64 KiB of the part just before where it resumes, or
    /// the first of the part's ranges when it holds none from byte 0; nil when it holds nothing.
    static func window(in state: ResumeState) -> ByteRange? {
        let size = SegmentedFetch<ContinuousClock>.overlap
        let prefix = state.contiguousPrefix
        if prefix > 0 { return ByteRange(Swift.max(0, prefix - size), prefix) }
        guard let first = state.completed.first, first.count > 0 else { return nil }
        return ByteRange(first.start, Swift.min(first.end, first.start + size))
    }
}
