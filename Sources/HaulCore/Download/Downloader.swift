import Foundation

/// Fetches one URL into its file: claims `NAME.part`, resumes it when its state says so (Range +
/// If-Range), streams the body through a `ByteAccumulator`, checkpoints (fsync + state file) every few
/// seconds, retries transient failures from where they stopped, then syncs and renames into place.
public struct Downloader: Sendable {
    public let driver: CurlDriver
    public let clock: any Clock<Duration>
    /// When a fresh download's first checkpoint is due: one that ends sooner never writes a state file.
    public var firstCheckpoint: Duration = .seconds(1)
    /// Time between checkpoints (and before the first one of a resumed download): what a crash can
    /// cost at most.
    public var checkpointInterval: Duration = .milliseconds(250)
    public var retryPolicy = RetryPolicy()
    /// Bytes per second of the first megabyte over one connection above which `-s N` does not split: such a
    /// connection is not what limits the download (a loopback or LAN server), and more connections would
    /// only add their overhead.
    public var fastConnection: Int64 = 256 << 20
    /// How long a deferred split watches the one connection before judging its rate again.
    public var splitWindow: Duration = .milliseconds(100)

    public init(driver: CurlDriver = .shared, clock: any Clock<Duration> = ContinuousClock()) {
        self.driver = driver
        self.clock = clock
    }

    /// Runs the download. Cancelling the calling task stops it promptly with a `.cancelled` error, after
    /// a last checkpoint, and leaves `NAME.part` and its state for a later resume.
    public func download(_ job: DownloadJob, events: (DownloadEvent) -> Void) async throws(HaulError)
        -> DownloadResult
    {
        // Writes, fsyncs and renames block: never on the cooperative pool, whoever calls.
        try await withTaskExecutorPreference(IOExecutor.shared) { () async throws(HaulError) -> DownloadResult in
            try await run(job, events: events)
        }
    }

    private func run(_ job: DownloadJob, events: (DownloadEvent) -> Void) async throws(HaulError) -> DownloadResult {
        if let name = job.outputName, let problem = FileNaming.problem(withPlainName: name) {
            throw HaulError(.usage, "the output name \(name.debugDescription) \(problem)")
        }
        let directory = try OutputDirectory(job.outputDirectory)
        let guessed = job.outputName ?? FileNaming.sanitize(FileNaming.lastPathSegment(of: job.url))
        guard var claim = try Claim.take(guessed, in: directory, policy: job.existingFile, url: job.url,
                                         resume: job.resume, notice: { events(.fact($0)) })
        else { return DownloadResult(file: guessed, path: directory.file(guessed), bytes: 0, skipped: true) }
        defer { try? claim.part.close() }

        var failures = 0
        while true {
            do {
                return try await attempt(job, claim: &claim, renamable: job.outputName == nil, events: events)
            } catch let error where error.category == .cancelled || Task.isCancelled {
                claim.discardIfEmpty()
                // A JPEG (by the task-local flag or its Content-Type) keeps what arrived as a preview.
                if job.partialPreview, let preview = try? PartialPreview.saveIfWanted(
                    part: claim.part, targetPath: claim.path,
                    contiguousBytes: claim.state?.contiguousPrefix ?? 0, contentType: claim.contentType)
                {
                    events(.fact(.previewSaved(path: preview)))
                }
                throw HaulError(.cancelled, "cancelled")
            } catch {
                guard retryPolicy.isTransient(error), failures < job.retries else {
                    claim.discardIfEmpty()
                    throw error
                }
                failures += 1
                let delay = retryPolicy.delay(afterFailure: failures, retryAfter: error.retryAfter)
                let resumeAt = claim.state?.contiguousPrefix ?? 0
                events(.fact(.retrying(attempt: failures, of: job.retries, delaySeconds: delay.seconds,
                                       resumeAt: resumeAt, reason: error)))
                do { try await clock.sleep(for: delay) } catch { throw HaulError(.cancelled, "cancelled") }
            }
        }
    }

    /// One request: resume or start, stream, finish. Keeps `claim.state` current for the next attempt.
    private func attempt(_ job: DownloadJob, claim: inout Claim, renamable: Bool,
                         events: (DownloadEvent) -> Void) async throws(HaulError) -> DownloadResult {
        if let state = claim.state, state.validator == nil, !state.completed.isEmpty {
            // Nothing to send in If-Range: a resumed range could splice two versions of the file.
            events(.fact(.resumeRefused(part: claim.partName, reason: .noValidators)))
            claim.state = nil
        }
        let offset = claim.state?.contiguousPrefix ?? 0
        // Segmented: the first request asks for one small range only, so learning the size and whether
        // ranges work costs no bytes thrown away; the segments then ask for exact ranges.
        let probing = job.segments > 1
        var request = HTTPRequest(url: job.url, options: job.transfer)
        request.headers = job.headers
        if probing {
            request.range = (offset, offset + SegmentPlan.defaultMinimumSplit - 1)
            if offset > 0 { request.ifRange = claim.state?.validator }
        } else if offset > 0, let validator = claim.state?.validator {
            request.range = (offset, nil)
            request.ifRange = validator
        }
        let transfer = driver.start(request)
        defer { transfer.cancel() }
        let head: ResponseHead
        do { head = try await transfer.head() } catch { throw HaulError.from(error) }

        if head.status == 416 && offset > 0 {
            // Nothing left to send: the part is already whole, if the size the server states is what is on disk.
            if let size = head.unsatisfiedRangeTotal, size == offset, claim.state?.total.map({ $0 == size }) ?? true,
                head["ETag"].map({ $0 == claim.state?.etag }) ?? true
            {
                if claim.announced == nil { events(.started(file: claim.name, path: claim.path, total: size)) }
                return try finish(&claim, job: job, received: 0, events: events)
            }
            events(.fact(.resumeRefused(part: claim.partName, reason: .refusedAt(offset: offset))))
            claim.state = nil
            return try await attempt(job, claim: &claim, renamable: renamable, events: events)
        }
        try HTTPStatus.check(head)
        claim.contentType = head["Content-Type"]

        // The server may name the file differently from the URL: move the claim before writing anything.
        if renamable, let suggested = head["Content-Disposition"].flatMap(FileNaming.filename(fromContentDisposition:)) {
            let named = FileNaming.sanitize(suggested)
            if named != claim.name && named != Self.baseOf(claim.name) {
                claim.release()
                guard let moved = try Claim.take(named, in: claim.directory, policy: job.existingFile, url: job.url,
                                                 resume: job.resume, notice: { events(.fact($0)) })
                else {
                    return DownloadResult(file: named, path: claim.directory.file(named), bytes: 0, skipped: true)
                }
                claim = moved
                claim.contentType = head["Content-Type"]
                if claim.state != nil {
                    transfer.cancel()
                    return try await attempt(job, claim: &claim, renamable: false, events: events)
                }
            }
        }

        let placement = try ResponseCheck.placement(of: head, asked: request.range,
                                                    knownTotal: offset > 0 ? claim.state?.total : nil)
        let ranged = placement.isRange
        let start = placement.start
        if offset > 0 && !ranged {
            events(.fact(.resumeRefused(part: claim.partName, reason: Self.refusal(head: head, state: claim.state))))
        }
        let total = placement.total
        if start == 0 {
            // Only when there is something to drop: truncating a new, empty file makes ext4 flush it
            // whole at close (seen in bench/profile).
            if try claim.part.size() > 0 { try claim.part.truncate(to: 0) }
            claim.state = ResumeState(url: job.url, etag: head["ETag"], lastModified: head["Last-Modified"], total: total)
        }
        let file = claim.name
        if claim.announced?.path != claim.path || claim.announced?.total != total {
            // Once per file: a second request for the same file (the rest after a probe) is not news.
            claim.announced = (claim.path, total)
            events(.started(file: file, path: claim.path, total: total))
        }
        if probing && !ranged && offset == 0 {
            events(.fact(.oneConnection(reason: .noRanges)))
        }

        // This answer's body: the probe's range, the rest of the file, or all of it.
        let bodyEnd = placement.end
        var written = start
        let bodyBegan = ContinuousClock.now
        do {
            let clock = self.clock
            try await stream(transfer.bytes, claim: &claim, start: start, end: bodyEnd, total: total,
                             written: &written, clock: clock, events: events)
        } catch {
            let failure = HaulError.from(error)
            if written > start { try? claim.checkpoint(adding: ByteRange(start, written)) }
            throw failure
        }
        if let bodyEnd, written != bodyEnd {
            try? claim.checkpoint(adding: ByteRange(start, written))
            throw HaulError(.network, "connection closed after \(written) of \(total ?? bodyEnd) bytes")
        }
        claim.state?.add(ByteRange(start, written))
        guard probing, ranged, written < (total ?? .max) else {
            return try finish(&claim, job: job, received: written - start, events: events)
        }
        guard let total else {
            // A size the server will not tell: go on over one connection from here.
            var single = job
            single.segments = 1
            var result = try await attempt(single, claim: &claim, renamable: false, events: events)
            result.bytes += written - start  // the probe's
            return result
        }
        // More connections help when each is held back (a per-connection limit, a long round trip). One
        // that brought the probe this fast is not (yet): the others wait until it slows down.
        let probeSeconds = (ContinuousClock.now - bodyBegan).seconds
        let probeRate = probeSeconds > 0 ? Double(written - start) / probeSeconds : .infinity
        let deferSplit = written - start >= SegmentPlan.defaultMinimumSplit && probeRate >= Double(fastConnection)
        if deferSplit {
            events(.fact(.splitDeferred(bytesPerSecond: probeRate)))
        }

        let before = claim.state?.completed.reduce(0) { $0 + $1.count } ?? 0
        do {
            let clock = self.clock
            try await segmented(job, total: total, claim: &claim, deferSplit: deferSplit, clock: clock, events: events)
        } catch let refused as SegmentRefused {
            try? claim.checkpoint(adding: nil)
            events(.fact(.oneConnection(reason: .segmentRefused(status: refused.status))))
            var single = job
            single.segments = 1
            return try await attempt(single, claim: &claim, renamable: false, events: events)
        } catch {
            try? claim.checkpoint(adding: nil)
            throw HaulError.from(error)
        }
        return try finish(&claim, job: job, received: total - before + (written - start), events: events)
    }

    /// Syncs the data, verifies the checksum, gives `NAME.part` its name (the next free one if something
    /// appeared at `NAME` meanwhile, unless `--overwrite`) and drops the state file.
    private func finish(_ claim: inout Claim, job: DownloadJob, received: Int64,
                        events: (DownloadEvent) -> Void) throws(HaulError) -> DownloadResult {
        try claim.part.sync()
        if let checksum = job.checksum {
            let actual = try claim.part.withDescriptor { (fd) throws(HaulError) in
                try FileDigest.hex(ofDescriptor: fd, path: claim.partPath, algorithm: checksum.algorithm)
            }
            guard actual == checksum.hex else {
                // The bytes are all there but not the ones wanted: nothing to resume, nothing to name.
                claim.removeState()
                throw HaulError(.checksum, "checksum mismatch: \(checksum.algorithm.rawValue) is \(actual), expected "
                                + "\(checksum.hex); the data stays in \(FilePath.baseName(of: claim.partPath))")
            }
        }
        let path = try claim.place(replacing: job.existingFile == .overwrite, notice: { events(.fact($0)) })
        DirectorySync.shared.sync(claim.directory.path)
        return DownloadResult(file: claim.name, path: path, bytes: received, skipped: false)
    }

    /// Fetches the missing ranges over `job.segments` connections (child tasks of a task group), writing
    /// in place. Progress is summed into one stream of events, and checkpoints record every worker's ranges.
    /// With `deferSplit`, one connection fetches alone while it keeps up `fastConnection`; the others join
    /// (stealing halves of what is left) as soon as a window of `splitWindow` shows it slower.
    private func segmented<C: Clock<Duration>>(_ job: DownloadJob, total: Int64, claim: inout Claim,
                                               deferSplit: Bool, clock: C,
                                               events: (DownloadEvent) -> Void) async throws {
        var missing: [ByteRange] = []
        var cursor: Int64 = 0
        for done in claim.state?.completed ?? [] {
            if done.start > cursor { missing.append(ByteRange(cursor, done.start)) }
            cursor = Swift.max(cursor, done.end)
        }
        if cursor < total { missing.append(ByteRange(cursor, total)) }
        let plan = SegmentPlan(missing: missing, parts: deferSplit ? 1 : job.segments)
        let gate = SplitGate(open: !deferSplit)

        var request = HTTPRequest(url: job.url, options: job.transfer)
        request.headers = job.headers
        request.ifRange = claim.state?.validator
        let template = request
        let (updates, sink) = AsyncStream.makeStream(of: SegmentUpdate.self)
        let part = claim.part
        let driver = self.driver
        let workers = job.segments
        async let fetched: Void = {
            defer { sink.finish() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<workers {
                    group.addTask {
                        // Worker 0 starts at once; the others when the gate opens, or never.
                        if worker > 0, !(await gate.wait()) { return }
                        try await Self.fetchSegments(worker: worker, plan: plan, request: template,
                                                     part: part, total: total, driver: driver, clock: clock,
                                                     updates: sink)
                        gate.close()  // nothing left to claim: workers still waiting have nothing to do
                    }
                }
                try await group.waitForAll()
            }
        }()

        var meter = RateMeter()
        let origin = clock.now
        // As over one connection: a fresh download's first checkpoint comes later than the next ones.
        let fresh = (claim.state?.completed.reduce(0) { $0 + $1.count } ?? 0) <= SegmentPlan.defaultMinimumSplit
        var nextCheckpoint = origin.advanced(by: fresh ? firstCheckpoint : checkpointInterval)
        var window = (start: ContinuousClock.now, bytes: claim.state?.completed.reduce(0) { $0 + $1.count } ?? 0)
        // While the split waits, a tick each window judges the rate even when no bytes come at all.
        let ticker = deferSplit ? Task(executorPreference: IOExecutor.shared) { [splitWindow] in
            while !gate.isOpen, (try? await Task.sleep(for: splitWindow)) != nil { sink.yield(.tick(at: .now)) }
        } : nil
        defer { ticker?.cancel() }
        for await update in updates {
            var batch: Int64 = 0
            let stamp: ContinuousClock.Instant
            switch update {
            case .fetched(let range, let at):
                claim.state?.add(range)
                batch = range.count
                stamp = at
            case .tick(let at):
                stamp = at
            }
            let completed = claim.state?.completed.reduce(0) { $0 + $1.count } ?? 0
            let now = clock.now
            // Judged by when bytes arrived, not when this loop got to them (a checkpoint may have held it).
            if !gate.isOpen, case let elapsed = (stamp - window.start).seconds, elapsed >= splitWindow.seconds {
                let rate = Double(completed - window.bytes) / elapsed
                if rate < Double(fastConnection), gate.open() {
                    events(.fact(.split(bytesPerSecond: rate, connections: job.segments)))
                }
                window = (stamp, completed)
            }
            guard batch > 0 else { continue }
            meter.record(bytes: completed, at: origin.duration(to: now).seconds)
            events(.progress(DownloadProgress(completed: completed, batchBytes: batch, total: total,
                                              bytesPerSecond: meter.bytesPerSecond)))
            if now >= nextCheckpoint {
                try claim.checkpoint(adding: nil)
                nextCheckpoint = now.advanced(by: checkpointInterval)
            }
        }
        try await fetched
        guard claim.state?.completed == [ByteRange(0, total)] else {
            throw HaulError(.network, "segments ended with bytes missing")
        }
    }

    /// One connection of a segmented download: fetches ranges from the plan until none is left.
    private static func fetchSegments<C: Clock<Duration>>(
        worker: Int, plan: SegmentPlan, request: HTTPRequest, part: PartFile,
        total: Int64, driver: CurlDriver, clock: C, updates: AsyncStream<SegmentUpdate>.Continuation
    ) async throws {
        while let range = plan.claim(for: worker) {
            var ask = request
            ask.range = (range.start, range.end - 1)
            let transfer = driver.start(ask)
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
                updates.yield(.fetched(ByteRange(offset, progress.completed), at: .now))
                offset = progress.completed
            }
            if let end = plan.end(of: worker), offset < end {
                throw HaulError(.network, "connection closed \(end - offset) bytes short of a segment's end")
            }
        }
    }

    /// Writes the body into the part file, reporting each batch and checkpointing every interval.
    private func stream<C: Clock<Duration>>(_ bytes: TransferBytes, claim: inout Claim, start: Int64, end: Int64?,
                                            total: Int64?, written: inout Int64, clock: C,
                                            events: (DownloadEvent) -> Void) async throws {
        var nextCheckpoint = clock.now.advanced(by: start > 0 ? checkpointInterval : firstCheckpoint)
        for try await progress in ByteAccumulator(bytes, writingTo: claim.part, startingAt: start, end: end,
                                                  total: total, clock: clock) {
            written = progress.completed
            events(.progress(progress))
            let now = clock.now
            if now >= nextCheckpoint {
                try claim.checkpoint(adding: ByteRange(start, written))
                nextCheckpoint = now.advanced(by: checkpointInterval)
            }
        }
    }

    /// Why the server's answer to a resume request means starting over.
    static func refusal(head: ResponseHead, state: ResumeState?) -> ResumeRefusal {
        let changed = (state?.etag != nil && head["ETag"] != nil && head["ETag"] != state?.etag)
            || (state?.etag == nil && state?.lastModified != nil && head["Last-Modified"] != state?.lastModified)
        return changed ? .validatorsChanged : .rangeIgnored(status: head.status)
    }

    /// The unsuffixed name a renamed claim (`name.1.ext`) stands for, to avoid moving it for its own name.
    private static func baseOf(_ name: String) -> String {
        let (stem, ext) = FileNaming.split(name)
        guard let dot = stem.lastIndex(of: "."), Int(stem[stem.index(after: dot)...]) != nil else { return name }
        return String(stem[..<dot]) + ext
    }
}

/// What the segment workers (and the split's ticker) tell the parent of a segmented download.
enum SegmentUpdate: Sendable {
    /// A worker wrote these bytes, at this moment.
    case fetched(ByteRange, at: ContinuousClock.Instant)
    /// A window passed (only while extra connections wait to be let in).
    case tick(at: ContinuousClock.Instant)
}

/// A segment's Range request was answered with something else (a server that advertises ranges but
/// ignores them): the download goes on over one connection.
struct SegmentRefused: Error {
    let status: Int
}
