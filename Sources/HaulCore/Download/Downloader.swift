import FoundationEssentials
import Glibc

/// Fetches one URL into its file: claims `NAME.part`, resumes it when its state says so (Range +
/// If-Range), streams the body through a `ByteAccumulator`, checkpoints (fsync + state file) one second
/// in and every 250 ms after (`firstCheckpoint`, `checkpointInterval`), retries transient failures from where they stopped, then syncs and renames into place.
///
/// The decisions (what to ask for, whether a resume holds, which name, whether to split, when to retry) are
/// `DownloadStateMachine`'s. This is the executor around it: one loop that carries out the machine's actions
/// (requests, file writes over one connection here or several in `SegmentedFetch`, the resume state, waits)
/// and tells it what came of them. Everything that waits or measures time reads `clock`.
package struct Downloader: Sendable {
    /// The driver given, or the process-wide one, taken when a download first asks: a command line's first
    /// download claims its name and opens its part while libcurl is still loading on the other core.
    var driver: CurlDriver { givenDriver ?? .shared }
    private let givenDriver: CurlDriver?
    let clock: any Clock<Duration>
    /// When a fresh download's first checkpoint is due: one that ends sooner never writes a state file.
    var firstCheckpoint: Duration = .seconds(1)
    /// Time between checkpoints (and before the first one of a resumed download): what a crash can
    /// cost at most.
    var checkpointInterval: Duration = .milliseconds(250)
    /// When a fresh download's journal starts (with the records of every batch so far): a crash after this
    /// costs only what was still in memory. One that ends sooner writes neither journal nor state.
    var recordAfter: Duration = .milliseconds(100)
    var retryPolicy = RetryPolicy()
    /// `-s N`'s race: when every connection brought this many bytes per second over the first `raceWindow`
    /// (or `raceEarlyBytes` each at this rate, sooner), nothing seems to limit one connection (loopback, a
    /// LAN: four connections there share what one would get alone) and one goes on alone, watched: if it
    /// then brings less than half of what they all brought together, the others come back (`LoneWatch`). A
    /// limit per connection below it (a server's, a network's) keeps them all. Half a gigabit per
    /// connection: on a loaded two-core machine four loopback connections brought 110-150 MiB/s each, where
    /// nginx's `limit_rate` with a first burst of up to 4 MiB is told apart up to 48 MiB/s per connection.
    var notLimited: Int64 = 64 << 20
    var raceWindow: Duration = .milliseconds(250)
    /// An earlier verdict: every connection brought this much at `notLimited` or faster (see `RaceJudge`).
    var raceEarlyBytes: Int64 = 16 << 20

    package init(driver: CurlDriver? = nil, clock: any Clock<Duration> = ContinuousClock()) {
        givenDriver = driver
        self.clock = clock
    }

    /// Runs the download. Cancelling the calling task stops it promptly with a `.cancelled` error, after
    /// a last checkpoint, and leaves `NAME.part` and its state for a later resume.
    /// `continuing`: the job's `outputName` is the part this download held in its previous run, a moment ago
    /// maybe (a resume right after a pause): a lock on it that lingers is waited for (see `Claim.take`).
    /// `transferEnded`: awaited when the job syncs, once every byte has come (in memory, or written) and before
    /// the rest (the write of what is in memory, the fsync, the name: the disk's part of the work, which needs
    /// no connection): the manager gives the slot to the next download, and says whether it took it back (false
    /// when too many are finishing already; the download then asks again before the fsync).
    /// - Parameter beforeNaming: awaited once the file is whole (and synced), right before it takes its name:
    ///   the service waits there until its store holds the download's `started` (the part's identity), so
    ///   that a kill after the rename finds the file its own.
    func download(_ job: DownloadJob, continuing: Bool = false, alone: Bool = false,
                          transferEnded: (@Sendable () async -> Bool)? = nil,
                          beforeNaming: (@Sendable () async -> Void)? = nil,
                          events: (DownloadEvent) -> Void)
        async throws(HaulError) -> DownloadResult
    {
        let clock = self.clock
        func go() async throws(HaulError) -> DownloadResult {
            // The clock every real download has, by its concrete type: the generic loop is then compiled for
            // it (no witness calls, no boxed instants, no metadata looked up per file). Any other (a test's
            // manual clock) runs the same loop through the existential.
            if let continuous = clock as? ContinuousClock {
                return try await run(job, continuing: continuing, alone: alone, clock: continuous,
                                     transferEnded: transferEnded, beforeNaming: beforeNaming, events: events)
            }
            return try await run(job, continuing: continuing, alone: alone, clock: clock, transferEnded: transferEnded,
                                 beforeNaming: beforeNaming, events: events)
        }
        // Writes, fsyncs and renames block: never on the cooperative pool, whoever calls. A task that prefers
        // the I/O executor already (the manager's) goes on as it is: a second preference record would be
        // walked at each of its hops.
        if withUnsafeCurrentTask(body: { $0?.unownedTaskExecutor == IOExecutor.shared.asUnownedTaskExecutor() }) {
            return try await go()
        }
        return try await withTaskExecutorPreference(IOExecutor.shared) { () async throws(HaulError) -> DownloadResult in
            try await go()
        }
    }

    private func run<C: Clock<Duration>>(_ job: DownloadJob, continuing: Bool, alone: Bool, clock: C,
                                         transferEnded: (@Sendable () async -> Bool)?,
                                         beforeNaming: (@Sendable () async -> Void)?,
                                         events: (DownloadEvent) -> Void)
        async throws(HaulError) -> DownloadResult
    {
        if let name = job.outputName, let problem = FileNaming.problem(withPlainName: name) {
            throw HaulError(.usage, "the output name \(name.debugDescription) \(problem)")
        }
        let directory = try OutputDirectory(job.outputDirectory, below: job.confinedTo)
        let guessed = job.outputName ?? FileNaming.sanitize(FileNaming.lastPathSegment(of: job.url))
        // -N: an existing file is asked about (If-Modified-Since its mtime) and replaced only by a newer one.
        var job = job
        var modifiedSince: String?
        if job.timestamping, let mtime = directory.modificationTime(guessed) {
            modifiedSince = HTTPDate.format(mtime)
            job.existingFile = .overwrite
        }
        let taking = try Claim.take(guessed, in: directory, policy: job.existingFile, url: job.url,
                                    resume: job.resume, remoteTime: job.remoteTime,
                                    continuing: continuing && job.outputName != nil, notice: { events(.fact($0)) })
        guard let claim = taking.claim
        else { return Self.nothingToFetch(taking, asked: guessed, in: directory, events: events) }
        if let checksum = job.checksum { claim.part.startDigest(checksum.algorithm) }

        // -s N: the other connections open while the probe asks for the size, not after its answer (see
        // `.request`). Not with --http2, whose segments take fresh connections.
        let openAhead = job.segments > 1 && job.transfer.httpVersion != .http2
        // A connection of its own: each of -s N's segments (so that a limit per connection limits each), and a
        // download that shares its host with no other (`alone`). Over HTTPS that is HTTP/1.1 unless --http2
        // is asked: one stream gains nothing from HTTP/2's multiplexing and pays for its framing (libcurl
        // hands over HTTP/2 data a frame at a time; 1 GiB over HTTPS took 1.39 s instead of 1.78 s).
        let ownConnection = job.segments > 1 || (alone && job.transfer.httpVersion == nil)
        var execution = Execution(job: job, ownConnection: ownConnection, modifiedSince: modifiedSince,
                                  machine: DownloadStateMachine(job: job, name: claim.name, retryPolicy: retryPolicy),
                                  claim: consume claim, openAhead: openAhead, transferEnded: transferEnded)
        defer {
            execution.transfer?.cancel()
            execution.claim.close()
        }
        var next = execution.machine.begin(resume: execution.claim.state)
        while true {
            let step: Step
            do {
                step = try await perform(next, &execution, clock: clock, beforeNaming: beforeNaming, events: events)
            } catch {
                execution.transfer?.cancel()
                execution.transfer = nil
                next = execution.machine.failed(error, cancelled: Task.isCancelled, resume: execution.claim.state)
                continue
            }
            switch step {
            case .next(let action): next = action
            case .end(let outcome): return try outcome.get()
            }
        }
    }

    /// The outcome of a download that `Claim.take` held no name for: skipped (`--skip-existing`), or finished
    /// by an earlier run (`Claim.Taking.finishedEarlier`).
    private static func nothingToFetch(_ taking: Claim.Taking, asked name: String, in directory: OutputDirectory,
                                       events: (DownloadEvent) -> Void) -> DownloadResult {
        guard case .finishedEarlier(let file) = taking else {
            return DownloadResult(file: name, path: directory.file(name), bytes: 0, skipped: true)
        }
        events(.fact(.finishedEarlier(file: file)))
        return DownloadResult(file: file, path: directory.file(file), bytes: 0, skipped: false)
    }

    /// What carrying out an action leads to: the machine's next action, or the download's outcome.
    private enum Step {
        case next(DownloadStateMachine.Action)
        case end(Result<DownloadResult, HaulError>)
    }

    /// What the executor carries from one action of the machine to the next, across requests and attempts:
    /// the machine, the claim it is told about (the part, its resume state), the transfer in flight and the
    /// two things done once (the connections opened ahead, the slot handed over); and, fixed for the
    /// download, how its requests are made.
    private struct Execution {
        let job: DownloadJob
        let ownConnection: Bool
        /// -N: the existing file's mtime, asked about with If-Modified-Since.
        let modifiedSince: String?
        var machine: DownloadStateMachine
        var claim: Claim
        /// The transfer of the last request (nil before the first, and after a failure).
        var transfer: Transfer? = nil
        /// Whether the next request opens the connections its segments will take (once, with the probe).
        var openAhead: Bool
        /// The manager's hand-over of the slot (see `download`): nil once made for a body in memory (`receive`),
        /// so that it is not asked for again before the fsync.
        var transferEnded: (@Sendable () async -> Bool)?
    }

    /// Carries out one action of the machine and reports to it what came of it. Throws what ends the attempt
    /// (the caller tells the machine, which retries or gives up).
    private func perform<C: Clock<Duration>>(
        _ action: DownloadStateMachine.Action, _ execution: inout Execution, clock: C,
        beforeNaming: (@Sendable () async -> Void)?, events: (DownloadEvent) -> Void
    ) async throws(HaulError) -> Step {
        let job = execution.job
        switch action {
        case .request(let asked):
            return try await send(asked, &execution, clock: clock)

        case .restart(let why, let request):
            events(.fact(why))
            execution.claim.state = nil
            return .next(.request(request))

        case .move(let name):
            return try move(to: name, &execution, events: events)

        case .stream(let body):
            return .next(try await receive(body, &execution, clock: clock, events: events))

        case .segmented(let first, let total):
            guard let transfer = execution.transfer, let end = first.end
            else { preconditionFailure("segments with no first range") }
            try prepare(first, job: job, claim: &execution.claim, events: events)
            if job.segments > 1 { events(.fact(.split(connections: job.segments))) }
            return .next(try await fetchSegmented(job, total: total, first: (transfer, ByteRange(first.start, end)),
                                                  claim: &execution.claim, machine: &execution.machine, clock: clock,
                                                  events: events))

        case .oneConnection(let why, let then):
            events(.fact(why))
            return .next(then)

        case .retry(let delay, let fact):
            events(.fact(fact))
            do {
                try await clock.sleep(for: delay)
            } catch {
                // Cancelled while waiting: ended as any cancel (an empty part goes, a JPEG's preview is saved).
                return .next(execution.machine.failed(HaulError(.cancelled, "cancelled"), cancelled: true,
                                                      resume: execution.claim.state))
            }
            return .next(execution.machine.begin(resume: execution.claim.state))

        case .finish(let received, let announce):
            if let total = announce {
                let claim = execution.claim
                events(.started(file: claim.name, path: claim.path, total: total, part: claim.part.identity))
            }
            // What is left (fsync, rename, the directory's fsync) waits for the disk, not the network. Without
            // a sync the rest is a rename: not worth the hop.
            if job.sync, let ended = execution.transferEnded { _ = await ended() }
            try makeWhole(&execution.claim, job: job)
            if let beforeNaming { await beforeNaming() }
            return .end(.success(try name(&execution.claim, job: job, received: received, events: events)))

        case .fail(let error):
            execution.claim.discardIfEmpty()
            return .end(.failure(error))

        case .cancelled:
            execution.claim.discardIfEmpty()
            let claim = execution.claim
            // A JPEG (by the task-local flag or its Content-Type) keeps what arrived as a preview.
            if job.partialPreview, let preview = try? PartialPreview.saveIfWanted(
                part: claim.part, targetPath: claim.path,
                contiguousBytes: claim.state?.contiguousPrefix ?? 0, contentType: claim.contentType)
            {
                events(.fact(.previewSaved(path: preview)))
            }
            return .end(.failure(HaulError(.cancelled, "cancelled")))
        }
    }

    /// `.request`: sends `asked` over a new transfer and tells the machine the answer's head.
    private func send<C: Clock<Duration>>(_ asked: DownloadStateMachine.Request, _ execution: inout Execution,
                                          clock: C) async throws(HaulError) -> Step {
        let job = execution.job
        let modifiedSince = execution.modifiedSince
        var request = HTTPRequest(url: job.url, options: job.transfer)
        request.headers = job.headers
        // -s N: each connection is a TCP connection of its own (never streams multiplexed onto one), so
        // that a limit per connection limits each; the probe's is the first of them.
        request.ownConnection = execution.ownConnection
        request.range = asked.range.map { ($0.first, $0.last) }
        request.ifRange = asked.ifRange
        // Only on a request for the whole file: a range of the part is never conditional on the date.
        if let modifiedSince, asked.range == nil { request.headers.append("If-Modified-Since: \(modifiedSince)") }
        execution.transfer?.cancel()
        // Once, with the probe (which goes first): the connections its segments will take.
        let started = driver.start(request, clock: clock, openingAhead: execution.openAhead ? job.segments - 1 : 0)
        execution.openAhead = false
        execution.transfer = started
        let head: ResponseHead
        do { head = try await started.head() } catch { throw HaulError.from(error) }
        if head.status == 304, modifiedSince != nil, asked.range == nil {
            // -N, and the server's copy is no newer: the file stays as it is.
            started.cancel()
            execution.transfer = nil
            execution.claim.discardIfEmpty()
            let claim = execution.claim
            return .end(.success(DownloadResult(file: claim.name, path: claim.path, bytes: 0, skipped: true,
                                                notModified: true)))
        }
        // Of the last answer that was not an error: a JPEG's keeps a preview when cancelled.
        if (200..<300).contains(head.status) { execution.claim.contentType = head[.contentType] }
        return .next(try execution.machine.headArrived(head))
    }

    /// `.move`: the claim moves to `name` (or the next free name), and the machine is told.
    private func move(to name: String, _ execution: inout Execution,
                      events: (DownloadEvent) -> Void) throws(HaulError) -> Step {
        let job = execution.job
        execution.claim.release()
        let directory = execution.claim.directory
        let taking = try Claim.take(name, in: directory, policy: job.existingFile, url: job.url,
                                    resume: job.resume, remoteTime: job.remoteTime, notice: { events(.fact($0)) })
        guard let moved = taking.claim
        else { return .end(.success(Self.nothingToFetch(taking, asked: name, in: directory, events: events))) }
        let contentType = execution.claim.contentType
        execution.claim = moved
        execution.claim.contentType = contentType
        if let checksum = job.checksum { execution.claim.part.startDigest(checksum.algorithm) }
        return .next(try execution.machine.claimMoved(to: execution.claim.name, resume: execution.claim.state))
    }

    /// `.stream`: writes the answer's body into the part, and tells the machine where it ended.
    private func receive<C: Clock<Duration>>(_ body: DownloadStateMachine.Body, _ execution: inout Execution,
                                             clock: C, events: (DownloadEvent) -> Void)
        async throws(HaulError) -> DownloadStateMachine.Action
    {
        guard let transfer = execution.transfer else { preconditionFailure("a body to stream with no transfer") }
        try prepare(body, job: execution.job, claim: &execution.claim, events: events)
        // Its validators are in the resume state now, so a request for the rest gets this version or none.
        transfer.refitsToCap = body.continuable && execution.claim.state?.validator != nil
        let inMemory = transfer.hasEndedWell
        if inMemory, let ended = execution.transferEnded, await ended() {
            // The whole body is here, in memory (a small file, whose head waited for it): what is left is
            // the disk's (the direct write, a device round trip; with a sync the fsyncs; the name), and the
            // slot has gone to the next download. With --no-sync too: 1000 x 100 KiB, -j 8, 4% faster.
            execution.transferEnded = nil
        }
        let began = clock.now
        let written = inMemory
            ? try await write(transfer, body: body, into: &execution.claim, clock: clock, events: events)
            : try await stream(transfer.bytes, body: body, into: &execution.claim, clock: clock, events: events)
        return execution.machine.bodyEnded(at: written, elapsed: began.duration(to: clock.now),
                                           resume: execution.claim.state)
    }

    /// Before a body's first byte: drops the part's old bytes when it starts the file over, announces the
    /// file, says what there is to say.
    private func prepare(_ body: DownloadStateMachine.Body, job: DownloadJob, claim: inout Claim,
                         events: (DownloadEvent) -> Void) throws(HaulError) {
        if let why = body.refused { events(.fact(why)) }
        if let fresh = body.fresh {
            if claim.stateOnDisk || claim.journalOnDisk {
                // Starting over: the state file and journal on disk describe the bytes about to go. Gone (and
                // the removal durable) before a byte of the new body is written: left until the first
                // checkpoint, a kill before it left the old version's state over the new version's bytes,
                // with the journal recording them, and a later resume took them as the old version's.
                claim.removeState()
                if job.sync { claim.directory.syncNames() }
            }
            // Only when there is something to drop: truncating a new, empty file makes ext4 flush it
            // whole at close (seen in bench/profile).
            if !claim.part.isEmptyAsClaimed, try claim.part.size() > 0 { try claim.part.truncate(to: 0) }
            claim.part.journal?.reset()
            if let checksum = job.checksum { claim.part.startDigest(checksum.algorithm) }
            claim.state = fresh
        }
        if body.announce { events(.started(file: claim.name, path: claim.path, total: body.total, part: claim.part.identity)) }
        if let notice = body.notice { events(.fact(notice)) }
    }

    /// Writes one answer's body into the part from `body.start`, through the progress loop; returns where it
    /// ended. A body that fails, or ends short of `body.end`, keeps what arrived (checkpointed) and throws.
    private func stream<C: Clock<Duration>>(_ bytes: TransferBytes, body: DownloadStateMachine.Body,
                                            into claim: inout Claim, clock: C,
                                            events: (DownloadEvent) -> Void) async throws(HaulError) -> Int64 {
        let start = body.start
        var written = start
        let progress = ProgressLoop(clock: clock, first: start > 0 ? checkpointInterval : firstCheckpoint,
                                    interval: checkpointInterval, record: recordAfter)
        let mark = WrittenMark(start)
        let batches = ByteAccumulator(bytes, writingTo: claim.part, startingAt: start, end: body.end,
                                      total: body.total, clock: clock, written: mark, alone: true)
        do {
            try await progress.run(batches, claim: &claim, events: events) { batch, _ in
                written = batch.completed
                return (progress: batch, adding: ByteRange(start, written))
            }
        } catch {
            let failure = HaulError.from(error)
            // Everything written, not only what the last report counted: the accumulator's last write (a
            // pause's, a stop's) is on disk and in the resume state, so the last report says it too. A pause
            // otherwise showed fewer bytes than the resume then asked the server past.
            if mark.offset > written {
                events(.progress(DownloadProgress(completed: mark.offset, batchBytes: mark.offset - written,
                                                  total: body.total, bytesPerSecond: 0)))
                written = mark.offset
            }
            if written > start { claim.lastCheckpoint(adding: ByteRange(start, written)) }
            throw failure
        }
        return try ended(body, at: written, claim: &claim)
    }

    /// `stream` for a body that had all come before its head was handed over (`Transfer.hasEndedWell`: a small
    /// file): its bytes are written as they lie in memory, and reported once. No accumulator, progress loop,
    /// rate window or checkpoint around them: nothing waits for the network here, so there is nothing to
    /// report in between, and the file is whole (or the write failed) a moment later. Writes, reports and
    /// throws what `stream` would for the same bytes.
    private func write<C: Clock<Duration>>(_ transfer: Transfer, body: DownloadStateMachine.Body,
                                           into claim: inout Claim, clock: C,
                                           events: (DownloadEvent) -> Void) async throws(HaulError) -> Int64 {
        let start = body.start
        let began = clock.now
        var written = start
        var spent: IOBuffer?
        do {
            while let batch = try await transfer.core.next(recycling: spent.take()) {
                if case .buffer(let buffer) = batch.storage { spent = buffer }
                let reached = written + Int64(batch.count)
                if let end = body.end, reached > end { throw BodyWrite.overflow(announced: end - start) }
                try claim.part.write(batch, at: written,
                                     completing: BodyWrite.completes(at: reached, end: body.end, total: body.total),
                                     alone: true)
                written = reached
            }
        } catch {
            let failure = HaulError.from(error)
            if written > start { claim.lastCheckpoint(adding: ByteRange(start, written)) }
            throw failure
        }
        // The rate `ByteAccumulator` reports for one batch: the bytes over the time they took.
        let rate = RateMeter.rate(of: written - start, over: began.duration(to: clock.now).seconds)
        events(.progress(DownloadProgress(completed: written, batchBytes: written - start, total: body.total,
                                          bytesPerSecond: rate)))
        return try ended(body, at: written, claim: &claim)
    }

    /// The end of a body written up to `written` without a failure: short of the end it announced, what came
    /// is kept (checkpointed) and the attempt fails; else it goes into the resume state.
    private func ended(_ body: DownloadStateMachine.Body, at written: Int64,
                       claim: inout Claim) throws(HaulError) -> Int64 {
        if let end = body.end, written != end {
            claim.lastCheckpoint(adding: ByteRange(body.start, written))
            throw HaulError(.network, "connection closed after \(written) of \(body.total ?? end) bytes")
        }
        claim.state?.add(ByteRange(body.start, written))
        return written
    }

    /// Fetches the file over the job's connections (`SegmentedFetch`), the first one going on with the answer
    /// in hand (`first`), and tells the machine how it went; a refused segment first checkpoints what the
    /// others fetched.
    private func fetchSegmented<C: Clock<Duration>>(_ job: DownloadJob, total: Int64, first: (Transfer, ByteRange),
                                                    claim: inout Claim, machine: inout DownloadStateMachine,
                                                    clock: C, events: (DownloadEvent) -> Void)
        async throws(HaulError) -> DownloadStateMachine.Action
    {
        var request = HTTPRequest(url: job.url, options: job.transfer)
        request.headers = job.headers
        request.ownConnection = true
        request.ifRange = claim.state?.validator
        let fetch = SegmentedFetch(driver: driver, clock: clock, request: request, etag: claim.state?.etag,
                                   lastModified: claim.state?.lastModified, connections: job.segments,
                                   total: total, firstCheckpoint: firstCheckpoint,
                                   checkpointInterval: checkpointInterval, recordAfter: recordAfter,
                                   notLimited: notLimited, raceWindow: raceWindow,
                                   raceEarlyBytes: raceEarlyBytes, retryPolicy: retryPolicy,
                                   reconnects: job.retries)
        // The segments write at several places at once: into reserved blocks they do not take turns.
        claim.part.reserveAhead(of: total)
        do {
            try await fetch.run(first: first, claim: &claim, events: events)
        } catch let refused as SegmentRefused {
            // Going on over one connection: an ordinary checkpoint (the part stays in use).
            try? claim.checkpoint(adding: nil)
            return machine.segmentRefused(status: refused.status, resume: claim.state)
        } catch {
            claim.lastCheckpoint(adding: nil)
            // Stopped (a failure, a cancel, a pause): the windows reserved ahead of the connections go back.
            claim.part.releaseUnwrittenReservations(keeping: claim.state?.completed ?? [])
            throw HaulError.from(error)
        }
        return machine.segmentsEnded()
    }

    /// Gives the part the server's time (when asked to), syncs it (unless `--no-sync`), verifies the checksum,
    /// gives `NAME.part` its name (the next free one if something appeared at `NAME` meanwhile, unless
    /// `--overwrite`), drops the state file and syncs the directory (unless `--no-sync`).
    /// The finished part's time, sync and checksum, before it takes its name.
    private func makeWhole(_ claim: inout Claim, job: DownloadJob) throws(HaulError) {
        if job.remoteTime, let stamp = claim.state?.lastModified.flatMap(HTTPDate.parse) {
            // The server's Last-Modified as the file's mtime (as wget does), set before the sync, which makes it
            // durable with the data: set after it, a crash could leave the file with the time of the download.
            try? claim.part.withDescriptor { fd in
                // Access and modification time both, as wget sets them.
                let seconds = Int(stamp.timeIntervalSince1970)
                var times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0)]
                _ = futimens(fd, &times)
            }
        }
        if job.sync { try claim.part.sync() }
        if let checksum = job.checksum {
            // Computed while the bytes came when they came in order from byte 0; else read back once.
            let size = try claim.part.size()
            let actual: String
            if let streamed = claim.part.writtenDigest(size: size) {
                actual = streamed
            } else {
                let path = claim.partPath
                actual = try claim.part.withDescriptor { (fd) throws(HaulError) in
                    try FileDigest.hex(ofDescriptor: fd, path: path, algorithm: checksum.algorithm)
                }
            }
            guard actual == checksum.hex else {
                // The bytes are all there but not the ones wanted: nothing to resume, nothing to name.
                claim.removeState()
                throw HaulError(.checksum, "checksum mismatch: \(checksum.algorithm.rawValue) is \(actual), expected "
                                + "\(checksum.hex); the data stays in \(FilePath.baseName(of: claim.partPath))",
                                reason: .checksumMismatch)
            }
        }
    }

    /// The whole part takes its name (and the directory is synced).
    private func name(_ claim: inout Claim, job: DownloadJob, received: Int64,
                      events: (DownloadEvent) -> Void) throws(HaulError) -> DownloadResult {
        let path = try claim.place(replacing: job.existingFile == .overwrite, notice: { events(.fact($0)) })
        if job.sync { claim.directory.syncNames() }
        return DownloadResult(file: claim.name, path: path, bytes: received, skipped: false)
    }
}
