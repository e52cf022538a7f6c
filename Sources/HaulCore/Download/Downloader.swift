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
    /// The free space of the output file systems and what the running downloads still need of it: a download
    /// whose size is known and that does not fit fails before its first byte (`Room`).
    package var room = Room()
    /// The config file's categories (`[categories.NAME]`): the folder a download's file goes to by its final
    /// name and media type, decided once the server has answered (see `move`). None: off.
    package var categories = CategoryRules()
    /// What runs a torrent's job (`DownloadJob.torrent`): the service's libtorrent session. nil: a torrent's job
    /// fails, saying so.
    package var torrents: (any TorrentEngine)?

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
    /// - Parameter ticket: what holds the room the download still needs (`room.ticket()`), kept up to date by
    ///   its holder from the progress events, and released by it at the end; without one, the download holds
    ///   none (only its own check is made).
    func download(_ job: DownloadJob, continuing: Bool = false, alone: Bool = false,
                          ticket: Room.Ticket? = nil,
                          transferEnded: (@Sendable () async -> Bool)? = nil,
                          beforeNaming: (@Sendable () async -> Void)? = nil,
                          events: (DownloadEvent) -> Void)
        async throws(HaulError) -> DownloadResult
    {
        let clock = self.clock
        let ticket = ticket ?? room.ticket()
        defer { ticket.release() }
        func go() async throws(HaulError) -> DownloadResult {
            // The clock every real download has, by its concrete type: the generic loop is then compiled for
            // it (no witness calls, no boxed instants, no metadata looked up per file). Any other (a test's
            // manual clock) runs the same loop through the existential.
            if let continuous = clock as? ContinuousClock {
                return try await run(job, continuing: continuing, alone: alone, ticket: ticket, clock: continuous,
                                     transferEnded: transferEnded, beforeNaming: beforeNaming, events: events)
            }
            return try await run(job, continuing: continuing, alone: alone, ticket: ticket, clock: clock,
                                 transferEnded: transferEnded,
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

    private func run<C: Clock<Duration>>(_ job: DownloadJob, continuing: Bool, alone: Bool, ticket: Room.Ticket,
                                         clock: C,
                                         transferEnded: (@Sendable () async -> Bool)?,
                                         beforeNaming: (@Sendable () async -> Void)?,
                                         events: (DownloadEvent) -> Void)
        async throws(HaulError) -> DownloadResult
    {
        if let name = job.outputName, let problem = FileNaming.problem(withPlainName: name) {
            throw HaulError(.usage, "the output name \(name.debugDescription) \(problem)")
        }
        let guessed = job.plannedName
        // A category asked for, or a name given (-O): its folder is known before the answer, and the part is
        // claimed there. Otherwise the answer says (the server's name, its media type): see `move`.
        let known = job.category != nil || job.outputName != nil
        let placed = known ? try placement(of: job, name: guessed) : nil
        let directory = try Self.directory(of: job, placed: placed)
        if let placed { events(.fact(.category(name: placed.category, directory: placed.directory))) }
        // -N: an existing file is asked about (If-Modified-Since its mtime) and replaced only by a newer one.
        var job = job
        job.segments = Self.connections(for: job)
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
                                  machine: DownloadStateMachine(job: job, name: claim.name, retryPolicy: retryPolicy,
                                                                sorting: job.category == nil ? categories : nil,
                                                                category: placed?.category),
                                  claim: consume claim, openAhead: openAhead, transferEnded: transferEnded,
                                  room: ticket, sources: SourcePool.of(job))
        execution.category = placed?.category
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
                if execution.sources != nil {
                    next = await failedOver(error, &execution, clock: clock, events: events)
                    continue
                }
                next = execution.machine.failed(error, cancelled: Task.isCancelled, resume: execution.claim.state)
                continue
            }
            switch step {
            case .next(let action): next = action
            case .end(let outcome): return try outcome.get()
            }
        }
    }

    /// The connections a download takes: its `segments`, except over SFTP when they were left at one. There
    /// one connection is held back by SSH itself, where an HTTP one is not: one cipher stream each way, on
    /// one core at each end, and at most 8 MiB asked for ahead by libssh2; several connections run the
    /// server's side on as many cores and keep more in flight. Such a download takes
    /// `--max-connection-per-server` of them (4 unless set, which `1` keeps to one), as many as `-s 4` asks
    /// (a file of 1 MiB or less still takes one). SCP cannot ask for a range; FTP's one data connection is
    /// as fast as the disk already.
    static func connections(for job: DownloadJob) -> Int {
        guard job.segments == DownloadJob.defaultSegments, job.sources.count == 1,
              HTTPRequest.remoteFileProtocol(of: job.url) == .sftp else { return job.segments }
        return Swift.min(job.connectionsPerServer, JobOptions.segmentRange.upperBound)
    }

    /// The outcome of a download that `Claim.take` held no name for: skipped (`--skip-existing`), or finished
    /// by an earlier run (`Claim.Taking.finishedEarlier`).
    static func nothingToFetch(_ taking: Claim.Taking, asked name: String, in directory: OutputDirectory,
                               events: (DownloadEvent) -> Void) -> DownloadResult {
        guard case .finishedEarlier(let file) = taking else {
            return DownloadResult(file: name, path: directory.file(name), bytes: 0, skipped: true)
        }
        events(.fact(.finishedEarlier(file: file)))
        return DownloadResult(file: file, path: directory.file(file), bytes: 0, skipped: false)
    }

    /// What carrying out an action leads to: the machine's next action, or the download's outcome.
    enum Step {
        case next(DownloadStateMachine.Action)
        case end(Result<DownloadResult, HaulError>)
    }

    /// What the executor carries from one action of the machine to the next, across requests and attempts:
    /// the machine, the claim it is told about (the part, its resume state), the transfer in flight and the
    /// two things done once (the connections opened ahead, the slot handed over); and, fixed for the
    /// download, how its requests are made.
    struct Execution {
        /// The job, with the sources and the checksum its first answer's `Link` and `Digest` headers added.
        var job: DownloadJob
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
        /// What holds the room the download still needs, once its size is known (`prepare`).
        let room: Room.Ticket
        /// A download from several sources: which one the attempt asks, and what each has done (nil for one).
        var sources: SourcePool? = nil
        /// Whether the run's first answer was read for RFC 6249's duplicates and digest (once a run).
        var linksRead = false
        /// The category whose folder the claim is in (nil: the output directory).
        var category: String?
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
            return try await send(asked, &execution, clock: clock, events: events)

        case .restart(let why, let request):
            events(.fact(why))
            execution.claim.state = nil
            return .next(.request(request))

        case .move(let name, let sorting):
            return try move(to: name, sorting, &execution, events: events)

        case .stream(let body):
            if execution.sources != nil { return .next(try await receiveCounted(body, &execution, clock: clock, events: events)) }
            return .next(try await receive(body, &execution, clock: clock, events: events))

        case .segmented(let first, let total):
            guard let transfer = execution.transfer, let end = first.end
            else { preconditionFailure("segments with no first range") }
            try prepare(first, job: job, claim: &execution.claim, room: execution.room, events: events)
            if job.segments > 1 { events(.fact(.split(connections: job.segments))) }
            return .next(try await fetchSegmented(job, total: total, first: (transfer, ByteRange(first.start, end)),
                                                  sources: execution.sources,
                                                  claim: &execution.claim, machine: &execution.machine, clock: clock,
                                                  events: events))

        case .oneConnection(let why, let then):
            events(.fact(why))
            return .next(then)

        case .retry(let delay, let fact):
            events(.fact(fact))
            // A retry asks every source again but the dropped ones (one that takes over shows it agrees first).
            execution.sources?.retry(events: events)
            try await agreeWithPart(&execution, clock: clock, events: events)
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
            // A metalink's pieces, before the sync and the whole-file checksum: a bad one is fetched again.
            try await checkPieces(&execution, clock: clock, events: events)
            try makeWhole(&execution.claim, job: job)
            if let beforeNaming { await beforeNaming() }
            return .end(.success(try name(&execution.claim, job: job, received: received, events: events)))

        case .fail(let error):
            execution.claim.discardIfEmpty()
            // Every source failed: the first source's error says it best.
            if let pool = execution.sources, Self.isSourceFailure(error) { return .end(.failure(pool.failure(or: error))) }
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
}
