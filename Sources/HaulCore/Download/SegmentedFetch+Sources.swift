/// A segmented fetch from several sources: which URL each range is asked of, how a source's first answer is
/// checked against the file (its size at once; its bytes where they overlap another source's, `SourceLedger`),
/// and what a source that fails or disagrees costs (its work goes to the others; a dropped one's bytes too).

/// News of a source, from a worker to the loop that reports.
enum SourceChange: Sendable {
    case failed(Int, HaulError)
    case dropped(Int, SourceMismatch)
    /// Overlap bytes a source sent before its range, to compare with what another wrote there.
    case check(SourceLedger.Check)
}

/// A source's answer or connection failed (`mismatch` nil), or it serves another file: the worker hands its
/// range back and goes on from another source.
struct SourceFailure: Error {
    var error: HaulError
    var mismatch: SourceMismatch?

    init(error: HaulError) {
        self.error = error
    }

    init(mismatch: SourceMismatch) {
        error = HaulError(.protocol, mismatch.phrase)
        self.mismatch = mismatch
    }
}

extension SegmentedFetch {
    /// How many bytes before its range a source's first request begins: up to 64 KiB, whole pages (so the
    /// range's bytes sit where the part's direct writes want them).
    static var overlap: Int64 { 64 << 10 }

    /// `ask` for `range` from `source`: its URL and its own validator in `If-Range` (the primary source's is the
    /// part's, already in `request`); a source not checked yet is asked from `overlap` bytes before the range.
    func sourced(_ ask: inout HTTPRequest, range: ByteRange, source: Int, pool: SourcePool) {
        var first = range.start
        if source != pool.primary {
            ask.url = pool.url(of: source)
            if pool.needsAgreement(source) {
                ask.ifRange = nil
                first -= Swift.min(Self.overlap, range.start / 4096 * 4096)
            } else {
                let (etag, lastModified) = pool.validators(of: source)
                ask.ifRange = etag ?? lastModified
            }
        }
        ask.range = (first, range.end - 1)
    }

    /// Checks the answer of `source` to `asked`: an error status, an answer without the range, a range of
    /// another size (dropped), or of another version than the source's first answer named, is its failure.
    func agree(_ head: ResponseHead, asked: HTTPRequest, source: Int, pool: SourcePool) throws(SourceFailure) {
        do {
            try HTTPStatus.check(head)
        } catch {
            throw SourceFailure(error: error)
        }
        let stated = head.status == 206 ? head.contentRange?.total : head.contentLength
        if let stated, stated != total { throw SourceFailure(mismatch: .otherSize(size: stated, expected: total)) }
        guard head.status == 206 else {
            throw SourceFailure(error: HaulError(.protocol, "answered \(head.status) to a Range request",
                                                 httpStatus: head.status))
        }
        do {
            _ = try ResponseCheck.placement(of: head, asked: asked.range, knownTotal: total)
        } catch {
            throw SourceFailure(error: error)
        }
        if source != pool.primary, pool.needsAgreement(source) {
            pool.agreed(source, etag: head[.eTag], lastModified: head[.lastModified])
            return
        }
        let (etag, lastModified) = source == pool.primary ? (self.etag, self.lastModified) : pool.validators(of: source)
        if let other = ResponseCheck.otherVersion(of: head, etag: etag, lastModified: lastModified) {
            throw SourceFailure(error: HaulError(.protocol, "the file changed on the server during the download (\(other))"))
        }
    }

    /// `error` as its source's failure: a `SourceFailure`, or from several sources (`multiple`) any error of the
    /// source's answer or connection (a body that ends in a protocol error too); nil for any other.
    static func sourceFailure(_ error: any Error, multiple: Bool) -> SourceFailure? {
        if let failure = error as? SourceFailure { return failure }
        guard multiple, let error = error as? HaulError, Downloader.isSourceFailure(error) else { return nil }
        return SourceFailure(error: error)
    }

    /// `worker`'s source `current` failed or disagrees (`failure`): it is marked so (and the loop told), the
    /// worker's range goes back, and the worker takes another source with room; nil when there is none (it
    /// stops, claiming nothing more).
    func movedOn(_ worker: Int, from current: Int, _ failure: SourceFailure, reached: Int64, plan: SegmentPlan,
                 pool: SourcePool, updates: AsyncStream<SegmentUpdate>.Continuation) -> Int? {
        if let mismatch = failure.mismatch {
            if pool.drop(current, mismatch) { updates.yield(.source(.dropped(current, mismatch))) }
        } else if pool.fail(current, failure.error) {
            updates.yield(.source(.failed(current, failure.error)))
        }
        plan.handBack(worker, writtenUpTo: reached)
        guard let next = pool.move(worker, from: current) else {
            plan.giveBack(worker, writtenUpTo: reached)
            return nil
        }
        return next
    }

    /// Bytes of `range` came from `source`: counted to it, and kept unless it was dropped.
    func keep(_ range: ByteRange, from source: Int, ledger: inout SourceLedger?) -> Bool {
        guard ledger?.fetched(range, from: source) ?? true else { return false }
        sources?.add(bytes: range.count, from: source)
        return true
    }

    /// A worker's news of a source: said, and what it costs carried out.
    func tell(_ change: SourceChange, ledger: inout SourceLedger?, plan: SegmentPlan, claim: inout Claim,
              at seconds: Double, events: (DownloadEvent) -> Void) {
        guard let pool = sources else { return }
        switch change {
        case .failed(let source, let error):
            events(.fact(.sourceFailed(url: URLRedaction.masked(pool.url(of: source)), reason: error)))
        case .dropped(let source, let mismatch):
            events(.fact(.sourceDropped(url: URLRedaction.masked(pool.url(of: source)), reason: mismatch)))
            if let drop = ledger?.drop(source, at: 0) { discard(drop, plan: plan, claim: &claim) }
        case .check(let check):
            ledger?.expect(check)
        }
        settle(ledger: &ledger, plan: plan, claim: &claim, at: seconds, events: events)
    }

    /// Makes the checks of overlap bytes that can be made now (all of them with `force`), drops the sources
    /// whose bytes differ, and reports the sources when due.
    func settle(ledger: inout SourceLedger?, plan: SegmentPlan, claim: inout Claim, at seconds: Double,
                force: Bool = false, events: (DownloadEvent) -> Void) {
        guard let pool = sources else { return }
        let part = claim.part
        while let drop = ledger?.settle(completed: claim.state?.completed ?? [], force: force,
                                        read: { SourceLedger.read(part, $0) }).first {
            if pool.drop(drop.source, .otherBytes(offset: drop.offset)) {
                events(.fact(.sourceDropped(url: URLRedaction.masked(pool.url(of: drop.source)),
                                            reason: .otherBytes(offset: drop.offset))))
            }
            discard(drop, plan: plan, claim: &claim)
        }
        if let statuses = pool.report(at: seconds) { events(.sources(statuses)) }
    }

    /// Nothing a dropped source sent is kept: its ranges leave the resume state (checkpointed at once, so that
    /// no state on disk vouches for them), its connections stop where they are, and the ranges are fetched
    /// again (in this round when a worker is still there, else in the next).
    private func discard(_ drop: SourceLedger.Drop, plan: SegmentPlan, claim: inout Claim) {
        plan.cut(sources?.workers(using: drop.source) ?? [])
        guard !drop.ranges.isEmpty else { return }
        if let completed = claim.state?.completed {
            claim.state?.completed = ByteRange.merged(completed.flatMap { ByteRange.subtract(drop.ranges, from: $0) })
        }
        try? claim.checkpoint(adding: nil)
        plan.reopen(drop.ranges)
    }
}
