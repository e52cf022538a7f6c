/// Fetches the missing ranges of a file of known size over several connections, child tasks of one task
/// group, writing in place. The workers' ranges run through the same `ProgressLoop` as one connection's
/// batches: summed into one stream of progress, with checkpoints that record every worker's ranges.
///
/// Every connection starts at once: worker 0 goes on with the answer already in hand (the probe, whose
/// head said the size and that ranges work), the others each take a range of their own, and whoever runs
/// out of work takes half of the largest range still being fetched (`SegmentPlan`). Each is a TCP
/// connection of its own (`HTTPRequest.ownConnection`).
struct SegmentedFetch<C: Clock<Duration>>: Sendable {
    let driver: CurlDriver
    let clock: C
    /// What every segment asks, with a range of its own: URL, headers, options, If-Range.
    let request: HTTPRequest
    /// The validators of the version the part holds (the probe's): a segment answered from another
    /// version is a protocol error, never bytes of it spliced in.
    let etag: String?
    let lastModified: String?
    let connections: Int
    let total: Int64
    let firstCheckpoint: Duration
    let checkpointInterval: Duration
    let recordAfter: Duration
    /// The race: once `raceWindow` has passed, if every connection that began brought `notLimited` bytes
    /// per second or more, nothing limits one connection and the others stop (see `RaceJudge`).
    let notLimited: Int64
    let raceWindow: Duration
    /// What each connection must have brought (at `notLimited` or faster) for a verdict before the window.
    let raceEarlyBytes: Int64
    /// Which failures of one connection the others can make good (a refused request, a dropped connection):
    /// that connection's rest goes to them, and the download goes on (`SegmentPlan.giveBack`).
    let retryPolicy: RetryPolicy
    /// How many times one connection that dropped after bringing bytes asks again for the rest of its range
    /// (the job's `--retries`): a connection lost on the way is replaced at once, not given up.
    let reconnects: Int
    /// A download from several sources: which source each connection asks (`request`'s URL is the primary
    /// one's, the probe's). nil for one source, which runs as it always has.
    var sources: SourcePool? = nil
    /// `--sequential`: the ranges go out front to back (`SegmentPlan`'s in-order plan).
    var sequential = false

    /// Fetches what `claim.state` lacks: `first`'s range over `first`'s transfer (its head already checked),
    /// the rest over the other connections. Throws `SegmentRefused` when a segment's Range request is
    /// answered with something else. From several sources, a source dropped for its bytes leaves them missing
    /// again: another round fetches them from the others, as long as one is left.
    func run(first: (transfer: Transfer, range: ByteRange), claim: inout Claim,
             events: (DownloadEvent) -> Void) async throws {
        var dropped: [HaulError] = []
        var ledger = sources.map { SourceLedger(sources: $0.count) }
        try await round(first: first, claim: &claim, ledger: &ledger, dropped: &dropped, events: events)
        while let sources, !isWhole(claim), sources.anyUsable {
            let before = Self.bytes(in: claim)
            try await round(first: nil, claim: &claim, ledger: &ledger, dropped: &dropped, events: events)
            if Self.bytes(in: claim) <= before { break }
        }
        // Every connection has left its source.
        if let sources { events(.sources(sources.statusesNow())) }
        guard isWhole(claim) else {
            // Every connection that could fetch the rest failed: the first failure ends the attempt (a retry resumes).
            let failure = dropped.first ?? HaulError(.network, "segments ended with bytes missing")
            throw sources?.failure(or: failure) ?? failure
        }
    }

    private func isWhole(_ claim: Claim) -> Bool {
        claim.state?.completed == [ByteRange(0, total)]
    }

    /// The ranges `claim` lacks, `held` (the probe's, being fetched) aside.
    private func missing(in claim: Claim, held: ByteRange?) -> [ByteRange] {
        var missing: [ByteRange] = []
        var cursor: Int64 = 0
        for done in ByteRange.merged((claim.state?.completed ?? []) + (held.map { [$0] } ?? [])) {
            if done.start > cursor { missing.append(ByteRange(cursor, done.start)) }
            cursor = Swift.max(cursor, done.end)
        }
        if cursor < total { missing.append(ByteRange(cursor, total)) }
        return missing
    }

    /// One round: every connection fetches what is missing until nothing is left to claim.
    private func round(first: (transfer: Transfer, range: ByteRange)?, claim: inout Claim, ledger: inout SourceLedger?,
                       dropped: inout [HaulError], events: (DownloadEvent) -> Void) async throws {
        let assigned = sources?.assign(workers: connections) ?? []
        // Workers with no source (more connections than the sources' servers take) do not run.
        let connections = sources == nil ? self.connections : Swift.max(1, assigned.prefix { $0 != nil }.count)
        let plan = SegmentPlan(missing: missing(in: claim, held: first?.range), parts: connections, held: first?.range,
                               inOrder: sequential)
        let (updates, sink) = AsyncStream.makeStream(of: SegmentUpdate.self)
        let part = claim.part
        async let fetched: Void = fetch(first: first, plan: plan, connections: connections, assigned: assigned,
                                        part: part, updates: sink)

        var meter = RateMeter()
        let origin = clock.now
        let done = Self.bytes(in: claim)
        // As over one connection: a fresh download's first checkpoint comes later than the next ones.
        let progress = ProgressLoop(clock: clock, first: done <= SegmentPlan.defaultMinimumSplit ? firstCheckpoint
                                        : checkpointInterval, interval: checkpointInterval, record: recordAfter)
        var judge = RaceJudge(window: raceWindow, notLimited: notLimited, earlyBytes: raceEarlyBytes,
                              workers: connections, from: origin)
        var watch: LoneWatch<C.Instant>?
        // From several sources, connections go on spread over them: no race sends all but one home.
        let racing = connections > 1 && sources == nil
        let window = raceWindow
        try await progress.run(updates, claim: &claim, events: events) { update, claim in
            let (worker, range): (Int, ByteRange)
            switch update {
            case .fetched(let by, let source, let fetched):
                if ledger != nil {
                    guard keep(fetched, from: source, ledger: &ledger) else { return nil }
                }
                (worker, range) = (by, fetched)
            case .dropped(let left, let reason):
                dropped.append(reason)
                if left > 0 { events(.fact(.connectionDropped(connectionsLeft: left, reason: reason))) }
                return nil
            case .source(let change):
                tell(change, ledger: &ledger, plan: plan, claim: &claim, at: origin.duration(to: clock.now).seconds,
                     events: events)
                return nil
            }
            claim.state?.add(range)
            let now = clock.now
            if racing, let rate = judge.verdict(worker: worker, bytes: range.count, at: now) {
                plan.retire(allBut: worker, of: connections)
                events(.fact(.oneConnection(reason: .notLimited(bytesPerSecond: rate))))
                watch = LoneWatch(window: window, raceRate: judge.rateTogether(at: now), from: now)
            } else if let slowed = watch?.slowed(bytes: range.count, at: now), plan.recall() > 0 {
                events(.fact(.splitAgain(connections: connections, bytesPerSecond: slowed)))
            }
            let completed = Self.bytes(in: claim)
            let seconds = origin.duration(to: now).seconds
            meter.record(bytes: completed, at: seconds)
            if ledger != nil { settle(ledger: &ledger, plan: plan, claim: &claim, at: seconds, events: events) }
            return (progress: DownloadProgress(completed: completed, batchBytes: range.count, total: total,
                                               bytesPerSecond: meter.bytesPerSecond), adding: nil)
        }
        try await fetched
        if ledger != nil, isWhole(claim) {
            // The last checks: whatever bytes they wait for are all on disk now.
            settle(ledger: &ledger, plan: plan, claim: &claim, at: origin.duration(to: clock.now).seconds,
                   force: true, events: events)
        }
    }

    private static func bytes(in claim: Claim) -> Int64 {
        claim.state?.completedBytes ?? 0
    }

    /// The workers, one task group. As with `waitForAll()`, a worker's failure does not stop the others:
    /// what they fetch is kept, and the first failure that the others cannot make good (not transient: a
    /// transient one gives the worker's part back, `fetchSegments`) is thrown once they are done.
    /// `assigned`: each worker's source (from several sources; empty for one).
    private func fetch(first: (transfer: Transfer, range: ByteRange)?, plan: SegmentPlan, connections: Int,
                       assigned: [Int?], part: PartFile, updates: AsyncStream<SegmentUpdate>.Continuation) async throws {
        defer { updates.finish() }
        // Every connection's first request is posted here, together, so that the curl thread sends them in one
        // turn: posted by each worker's task, they went out one by one, 2-3 ms apart, as those tasks waited for
        // an I/O thread and the curl thread read the first connections' bursts (nginx sends 2 MiB at once)
        // before it came back for the next command; against a per-connection limit the download ends when
        // its last connection's piece does. The rest of worker 0's piece follows the probe: the curl thread
        // asks for it the moment the probe's last byte is in (`CurlDriver.start(_:clock:after:)`), not once
        // worker 0 has written the probe's bytes.
        var claimed: [Int: Asked] = [:]
        for worker in (first == nil ? 0 : 1)..<Swift.max(connections, 1) {
            guard let range = plan.claim(for: worker) else { break }
            let source = worker < assigned.count ? assigned[worker] : nil
            claimed[worker] = Asked(range: range, transfer: driver.start(rangeRequest(range, source: source), clock: clock))
        }
        let following = first.flatMap { first in
            plan.reservedRange(of: 0).map { range in
                Asked(range: range, transfer: driver.start(rangeRequest(range, source: assigned.first ?? nil),
                                                           clock: clock, after: first.transfer))
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<connections {
                let own = claimed[worker]
                let source = worker < assigned.count ? assigned[worker] : nil
                group.addTask {
                    try await fetchSegments(worker: worker, source: source, first: worker == 0 ? first : nil,
                                            claimed: own, following: worker == 0 ? following : nil, plan: plan,
                                            part: part, updates: updates)
                }
            }
            var failure: (any Error)?
            while !group.isEmpty {
                do {
                    try await group.next()
                } catch {
                    failure = failure ?? error
                }
            }
            if let failure { throw failure }
        }
    }

    /// A range's transfer, asked for before the worker that reads it runs.
    struct Asked: Sendable {
        let range: ByteRange
        let transfer: Transfer
    }

    /// One connection of a segmented download: `first`'s range when it has one, or `claimed` (a range the plan
    /// gave it already, its transfer asked for), then ranges from the plan until none is left. `following`,
    /// asked for already, serves the next range if that is the one it asked for (else it is cancelled: another
    /// worker took the range, or the race sent this one home).
    ///
    /// A failure the others can make good (`retryPolicy.isTransient`: a server that refuses a client's extra
    /// connections with 503 or 429, a connection reset) does not end the download: what this connection had
    /// left goes back to the plan for the others, and it stops. Any other failure is thrown. From several
    /// sources (`source`), a failure of its source (`SourceFailure`) hands its range back and the connection
    /// goes on from another source (`movedOn`), or stops when none has room.
    private func fetchSegments(worker: Int, source: Int?, first: (transfer: Transfer, range: ByteRange)?,
                               claimed: Asked?, following: Asked?, plan: SegmentPlan, part: PartFile,
                               updates: AsyncStream<SegmentUpdate>.Continuation) async throws
    {
        defer { plan.left(worker) }
        var following = following
        defer { following?.transfer.cancel() }
        var (first, claimed, source) = (first, claimed, source)
        defer { if let source { sources?.leave(worker, from: source) } }
        // Where this connection's current range is written up to.
        var reached = first?.range.start ?? claimed?.range.start ?? 0
        var reconnects = self.reconnects
        let link = Link(worker: worker, plan: plan, part: part, updates: updates)
        while true {
            do {
                if let taken = first {
                    first = nil
                    defer { taken.transfer.cancel() }
                    taken.transfer.refitsToCap = true
                    try await receive(taken.transfer, link, source: source, start: taken.range.start,
                                      reached: &reached, reconnects: &reconnects)
                }
                if let taken = claimed {
                    claimed = nil
                    defer { taken.transfer.cancel() }
                    reached = taken.range.start
                    let transfer = try await checked(taken.transfer, source: source)
                    try await receive(transfer, link, source: source, start: taken.range.start, reached: &reached,
                                      reconnects: &reconnects)
                }
                // When nothing is left to claim, a worker the race sent home waits (with no connection) in case
                // the one that went on turns out to be limited after all, and any other waits while others fetch,
                // in case one of them fails and gives its rest back.
                repeat {
                    while let range = plan.claim(for: worker) {
                        if let current = source, sources?.isUsable(current) == false {
                            // Its source was dropped or failed meanwhile: this range goes to the next one.
                            plan.handBack(worker, writtenUpTo: range.start)
                            guard let next = sources?.move(worker, from: current) else { source = nil; return }
                            source = next
                            continue
                        }
                        reached = range.start
                        let asked = following?.range == range ? following?.transfer : nil
                        if asked == nil { following?.transfer.cancel() }
                        following = nil
                        let transfer = try await transfer(for: range, asked: asked, source: source)
                        defer { transfer.cancel() }
                        try await receive(transfer, link, source: source, start: range.start, reached: &reached,
                                          reconnects: &reconnects)
                    }
                    following?.transfer.cancel()
                    following = nil
                } while await plan.waitForWork(worker)
                return
            } catch {
                if !Task.isCancelled, let sources, let current = source,
                    let failure = Self.sourceFailure(error, multiple: true)
                {
                    following?.transfer.cancel()
                    following = nil
                    source = movedOn(worker, from: current, failure, reached: reached, plan: plan, pool: sources,
                                     updates: updates)
                    if source == nil { return }
                    continue
                }
                let error = (error as? SourceFailure)?.error ?? error
                guard let transient = error as? HaulError, retryPolicy.isTransient(transient), !Task.isCancelled
                else { throw error }
                let left = plan.giveBack(worker, writtenUpTo: reached)
                updates.yield(.dropped(connectionsLeft: left, reason: transient))
                return
            }
        }
    }

    /// What a worker's reads share with the whole fetch.
    struct Link: Sendable {
        let worker: Int
        let plan: SegmentPlan
        let part: PartFile
        let updates: AsyncStream<SegmentUpdate>.Continuation
    }

    /// The request for `range` of this file, from `source` (nil: the one source). A source whose first answer
    /// is still to be checked is asked from a little before the range (`overlap`).
    private func rangeRequest(_ range: ByteRange, source: Int?) -> HTTPRequest {
        var ask = request
        if let sources, let source { sourced(&ask, range: range, source: source, pool: sources) }
        else { ask.range = (range.start, range.end - 1) }
        return ask
    }

    /// `range`'s transfer: `asked` (started ahead for it) once its head checks out, or one asked for now when
    /// there is none or it never started (the transfer it was to follow failed).
    private func transfer(for range: ByteRange, asked: Transfer?, source: Int?) async throws -> Transfer {
        guard let asked else { return try await rangeTransfer(range, source: source) }
        do {
            return try await checked(asked, source: source)
        } catch let error as HaulError where error.category == .cancelled && !Task.isCancelled {
            return try await rangeTransfer(range, source: source)
        }
    }

    /// A transfer of `range` whose answer is that range of this version of the file; the engine may end it to
    /// refit it to a new cap (`receive` then asks for the rest).
    private func rangeTransfer(_ range: ByteRange, source: Int?) async throws -> Transfer {
        try await checked(driver.start(rangeRequest(range, source: source), clock: clock), source: source)
    }

    /// `transfer` (a range of this file) once its head says it is the range it asked for of this version of
    /// the file; cancelled and thrown otherwise. From several sources, what is wrong with the answer is its
    /// source's failure (`SourceFailure`), and a source's first answer teaches its validators.
    private func checked(_ transfer: Transfer, source: Int?) async throws -> Transfer {
        let ask = transfer.request
        do {
            let head = try await transfer.head()
            if let sources, let source {
                try agree(head, asked: ask, source: source, pool: sources)
            } else {
                try HTTPStatus.check(head)
                // A 200 is a server that ignores ranges (one connection then); a 206 must be the range asked for.
                guard head.status == 206 else { throw SegmentRefused(status: head.status) }
                _ = try ResponseCheck.placement(of: head, asked: ask.range, knownTotal: total)
                if let other = ResponseCheck.otherVersion(of: head, etag: etag, lastModified: lastModified) {
                    throw HaulError(.protocol, "the file changed on the server during the download (\(other))")
                }
            }
        } catch {
            transfer.cancel()
            // From several sources, a connection or an answer that fails is its source's failure.
            if sources != nil, let failure = error as? HaulError, failure.category != .cancelled {
                throw SourceFailure(error: failure)
            }
            throw error
        }
        transfer.refitsToCap = true
        return transfer
    }

    /// Writes a range's body from `start` up to where the plan says this worker stops, `reached` following
    /// what is written. A transfer the engine ended to refit it to a new rate cap (`HaulError.refit`) is
    /// followed by a request for the rest, and so is one that dropped after bringing bytes, while `reconnects`
    /// lasts (each such drop uses one up). A body that begins before `start` (a source's first, `overlap`)
    /// hands those bytes to be compared, not written.
    private func receive(_ transfer: Transfer, _ link: Link, source: Int?, start: Int64, reached: inout Int64,
                         reconnects: inout Int) async throws {
        let (worker, plan, updates) = (link.worker, link.plan, link.updates)
        var offset = start
        var transfer = transfer
        var refitted: Transfer?
        defer { refitted?.cancel() }
        while true {
            var bytes = SegmentBytes(base: transfer.bytes, plan: plan, worker: worker, start: offset)
            if let source, let asked = transfer.request.range?.first, asked < offset {
                bytes.overlap = Int(offset - asked)
                bytes.compare = { updates.yield(.source(.check(.init(source: source, range: ByteRange(asked, asked + Int64($0.count)), bytes: $0)))) }
            }
            let began = offset
            let dropped: HaulError
            do {
                for try await progress in ByteAccumulator(bytes, writingTo: link.part, startingAt: offset, total: total,
                                                          clock: clock) {
                    updates.yield(.fetched(worker: worker, source: source ?? 0, range: ByteRange(offset, progress.completed)))
                    offset = progress.completed
                    reached = offset
                }
                guard let end = plan.end(of: worker), offset < end else { return }
                dropped = HaulError(.network, "connection closed \(end - offset) bytes short of a segment's end")
            } catch let error as HaulError where error.isRefit {
                guard let end = plan.end(of: worker), offset < end else { return }
                refitted?.cancel()
                transfer = try await rangeTransfer(ByteRange(offset, end), source: source)
                refitted = transfer
                continue
            } catch let error as HaulError where error.category == .network && !Task.isCancelled {
                dropped = error
            }
            // Dropped on the way after bringing bytes: the rest is asked for again at once, on another connection.
            // One that brought nothing (refused, or gone before its first byte) is not: its range goes to the
            // others (`fetchSegments`).
            guard reconnects > 0, offset > began, let end = plan.end(of: worker), offset < end else {
                if sources != nil { throw SourceFailure(error: dropped) }
                throw dropped
            }
            reconnects -= 1
            refitted?.cancel()
            transfer = try await rangeTransfer(ByteRange(offset, end), source: source)
            refitted = transfer
        }
    }
}

/// What a segment worker tells the download: bytes it wrote (from which source), that its connection failed
/// and what it had left went back to the others (`connectionsLeft` still fetching), or news of a source.
enum SegmentUpdate: Sendable {
    case fetched(worker: Int, source: Int, range: ByteRange)
    case dropped(connectionsLeft: Int, reason: HaulError)
    case source(SourceChange)
}

/// A segment's Range request was answered with something else (a server that advertises ranges but
/// ignores them): the download goes on over one connection.
struct SegmentRefused: Error {
    let status: Int
}
