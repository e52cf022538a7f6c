extension Downloader {
    /// `.stream`: writes the answer's body into the part, and tells the machine where it ended.
    func receive<C: Clock<Duration>>(_ body: DownloadStateMachine.Body, _ execution: inout Execution,
                                     clock: C, events: (DownloadEvent) -> Void)
        async throws(HaulError) -> DownloadStateMachine.Action
    {
        guard let transfer = execution.transfer else { preconditionFailure("a body to stream with no transfer") }
        try prepare(body, job: execution.job, claim: &execution.claim, room: execution.room, events: events)
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

    /// Before a body's first byte: checks that the file fits (a size known, and the free space less what the
    /// running downloads still need: else it throws, having written nothing), drops the part's old bytes when
    /// it starts the file over, announces the file, says what there is to say.
    func prepare(_ body: DownloadStateMachine.Body, job: DownloadJob, claim: inout Claim, room: Room.Ticket,
                 events: (DownloadEvent) -> Void) throws(HaulError) {
        if let total = body.total {
            // What is on disk already (a resume's recorded ranges) needs no more room.
            let kept = body.fresh == nil ? Swift.min(total, claim.state?.completedBytes ?? body.start) : 0
            try room.take(needed: total - kept, total: total, directory: claim.directory)
        }
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

    /// `notLimited` for the race of a download's connections, which SFTP never ends: there one connection is
    /// held to what one SSH cipher stream and libssh2's requests ahead carry (`connections(for:)`), however
    /// fast each connection is.
    static func raceLimit(_ notLimited: Int64, for request: HTTPRequest) -> Int64 {
        request.remoteFileProtocol == .sftp ? .max : notLimited
    }

    /// Fetches the file over the job's connections (`SegmentedFetch`), the first one going on with the answer
    /// in hand (`first`), and tells the machine how it went; a refused segment first checkpoints what the
    /// others fetched.
    func fetchSegmented<C: Clock<Duration>>(_ job: DownloadJob, total: Int64, first: (Transfer, ByteRange),
                                            sources: SourcePool?, claim: inout Claim, machine: inout DownloadStateMachine,
                                            clock: C, events: (DownloadEvent) -> Void)
        async throws(HaulError) -> DownloadStateMachine.Action
    {
        var request = HTTPRequest(url: sources.map { $0.url(of: $0.primary) } ?? job.url, options: job.transfer)
        request.headers = job.headers
        request.ownConnection = true
        request.ifRange = claim.state?.validator
        var fetch = SegmentedFetch(driver: driver, clock: clock, request: request, etag: claim.state?.etag,
                                   lastModified: claim.state?.lastModified, connections: job.segments,
                                   total: total, firstCheckpoint: firstCheckpoint,
                                   checkpointInterval: checkpointInterval, recordAfter: recordAfter,
                                   notLimited: Self.raceLimit(notLimited, for: request), raceWindow: raceWindow,
                                   raceEarlyBytes: raceEarlyBytes, retryPolicy: retryPolicy,
                                   reconnects: job.retries)
        fetch.sources = sources
        fetch.sequential = job.sequential
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
}
