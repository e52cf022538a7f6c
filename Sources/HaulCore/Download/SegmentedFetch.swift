/// Fetches the missing ranges of a file of known size over several connections, child tasks of one task
/// group, writing in place. The workers' ranges run through the same `ProgressLoop` as one connection's
/// batches: summed into one stream of progress, with checkpoints that record every worker's ranges.
///
/// With `deferSplit`, one connection fetches alone while it keeps up `fastConnection`; the others join
/// (stealing halves of what is left) as soon as a window of `splitWindow` shows it slower. While they wait,
/// a ticker in the same task group marks each window, so the rate is judged even when no bytes come at all.
struct SegmentedFetch<C: Clock<Duration>>: Sendable {
    let driver: CurlDriver
    let clock: C
    /// What every segment asks, with a range of its own: URL, headers, options, If-Range.
    let request: HTTPRequest
    let connections: Int
    let total: Int64
    let deferSplit: Bool
    let fastConnection: Int64
    let splitWindow: Duration
    let firstCheckpoint: Duration
    let checkpointInterval: Duration
    let recordAfter: Duration

    /// Fetches what `claim.state` lacks. Throws `SegmentRefused` when a segment's Range request is answered
    /// with something else.
    func run(claim: inout Claim, events: (DownloadEvent) -> Void) async throws {
        var missing: [ByteRange] = []
        var cursor: Int64 = 0
        for done in claim.state?.completed ?? [] {
            if done.start > cursor { missing.append(ByteRange(cursor, done.start)) }
            cursor = Swift.max(cursor, done.end)
        }
        if cursor < total { missing.append(ByteRange(cursor, total)) }
        let plan = SegmentPlan(missing: missing, parts: deferSplit ? 1 : connections)
        let gate = SplitGate(open: !deferSplit)
        let (updates, sink) = AsyncStream.makeStream(of: SegmentUpdate<C.Instant>.self)
        let part = claim.part
        async let fetched: Void = fetch(plan: plan, gate: gate, part: part, updates: sink)

        var meter = RateMeter()
        let origin = clock.now
        let done = Self.bytes(in: claim)
        // As over one connection: a fresh download's first checkpoint comes later than the next ones.
        let progress = ProgressLoop(clock: clock, first: done <= SegmentPlan.defaultMinimumSplit ? firstCheckpoint
                                        : checkpointInterval, interval: checkpointInterval, record: recordAfter)
        var watch = SplitWatch(length: splitWindow, fastConnection: fastConnection, from: origin, completed: done)
        try await progress.run(updates, claim: &claim, events: events) { update, claim in
            let batch: Int64
            let stamp: C.Instant
            switch update {
            case .fetched(let range, let at):
                claim.state?.add(range)
                batch = range.count
                stamp = at
            case .tick(let at):
                batch = 0
                stamp = at
            }
            let completed = Self.bytes(in: claim)
            let now = clock.now
            // Judged by when bytes arrived, not when this loop got to them (a checkpoint may have held it).
            if !gate.isOpen, let rate = watch.slowRate(completed: completed, at: stamp), gate.open() {
                events(.fact(.split(bytesPerSecond: rate, connections: connections)))
            }
            guard batch > 0 else { return nil }
            meter.record(bytes: completed, at: origin.duration(to: now).seconds)
            return (progress: DownloadProgress(completed: completed, batchBytes: batch, total: total,
                                               bytesPerSecond: meter.bytesPerSecond), adding: nil)
        }
        try await fetched
        guard claim.state?.completed == [ByteRange(0, total)] else {
            throw HaulError(.network, "segments ended with bytes missing")
        }
    }

    private static func bytes(in claim: Claim) -> Int64 {
        claim.state?.completed.reduce(0) { $0 + $1.count } ?? 0
    }

    /// The child tasks of a segmented fetch.
    private enum Child {
        case worker
        case ticker
    }

    /// The workers and, while the split waits, the ticker: one task group, which ends when the workers do.
    /// As with `waitForAll()`, a worker's failure does not stop the others: what they fetch is kept, and the
    /// first failure is thrown once they are done.
    private func fetch(plan: SegmentPlan, gate: SplitGate, part: PartFile,
                       updates: AsyncStream<SegmentUpdate<C.Instant>>.Continuation) async throws {
        defer { updates.finish() }
        try await withThrowingTaskGroup(of: Child.self) { group in
            for worker in 0..<connections {
                group.addTask {
                    // Worker 0 starts at once; the others when the gate opens, or never.
                    if worker > 0, !(await gate.wait()) { return .worker }
                    try await fetchSegments(worker: worker, plan: plan, part: part, updates: updates)
                    gate.close()  // nothing left to claim: workers still waiting have nothing to do
                    return .worker
                }
            }
            if deferSplit {
                group.addTask {
                    while !gate.isOpen, (try? await clock.sleep(for: splitWindow)) != nil {
                        updates.yield(.tick(at: clock.now))
                    }
                    return .ticker
                }
            }
            var working = connections
            var failure: (any Error)?
            while !group.isEmpty {
                do {
                    guard case .worker? = try await group.next() else { continue }
                } catch {
                    failure = failure ?? error  // only workers throw
                }
                working -= 1
                // Nothing left for the ticker to judge.
                if working == 0 { group.cancelAll() }
            }
            if let failure { throw failure }
        }
    }

    /// One connection of a segmented download: fetches ranges from the plan until none is left.
    private func fetchSegments(worker: Int, plan: SegmentPlan, part: PartFile,
                               updates: AsyncStream<SegmentUpdate<C.Instant>>.Continuation) async throws {
        while let range = plan.claim(for: worker) {
            var ask = request
            ask.range = (range.start, range.end - 1)
            let transfer = driver.start(ask, clock: clock)
            defer { transfer.cancel() }
            let head = try await transfer.head()
            try HTTPStatus.check(head)
            // A 200 is a server that ignores ranges (one connection then); a 206 must be the range asked for.
            guard head.status == 206 else { throw SegmentRefused(status: head.status) }
            _ = try ResponseCheck.placement(of: head, asked: ask.range, knownTotal: total)
            var offset = range.start
            let bytes = SegmentBytes(base: transfer.bytes, plan: plan, worker: worker, start: range.start)
            for try await progress in ByteAccumulator(bytes, writingTo: part, startingAt: range.start, total: total,
                                                      clock: clock) {
                updates.yield(.fetched(ByteRange(offset, progress.completed), at: clock.now))
                offset = progress.completed
            }
            if let end = plan.end(of: worker), offset < end {
                throw HaulError(.network, "connection closed \(end - offset) bytes short of a segment's end")
            }
        }
    }
}

/// What the segment workers (and the split's ticker) tell the parent of a segmented download.
enum SegmentUpdate<Instant: InstantProtocol>: Sendable {
    /// A worker wrote these bytes, at this moment.
    case fetched(ByteRange, at: Instant)
    /// A window passed (only while extra connections wait to be let in).
    case tick(at: Instant)
}

/// A segment's Range request was answered with something else (a server that advertises ranges but
/// ignores them): the download goes on over one connection.
struct SegmentRefused: Error {
    let status: Int
}

/// Judges a deferred split: the rate the one connection kept up over each window of `length`, by when its
/// bytes arrived. Below `fastConnection`, more connections are worth their overhead.
struct SplitWatch<Instant: InstantProtocol> where Instant.Duration == Duration {
    let length: Duration
    let fastConnection: Int64
    private var start: Instant
    private var bytes: Int64

    init(length: Duration, fastConnection: Int64, from start: Instant, completed bytes: Int64) {
        self.length = length
        self.fastConnection = fastConnection
        self.start = start
        self.bytes = bytes
    }

    /// `completed` bytes were on disk at `stamp`. Once a window has passed, a new one starts, and the rate of
    /// the one that ended is returned when it is below `fastConnection` (time to split); nil otherwise.
    mutating func slowRate(completed: Int64, at stamp: Instant) -> Double? {
        let elapsed = start.duration(to: stamp)
        guard elapsed >= length else { return nil }
        let rate = Double(completed - bytes) / elapsed.seconds
        (start, bytes) = (stamp, completed)
        return rate < Double(fastConnection) ? rate : nil
    }
}
