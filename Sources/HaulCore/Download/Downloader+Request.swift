extension Downloader {
    /// `.request`: sends `asked` over a new transfer and tells the machine the answer's head.
    func send<C: Clock<Duration>>(_ asked: DownloadStateMachine.Request, _ execution: inout Execution,
                                  clock: C, events: (DownloadEvent) -> Void) async throws(HaulError) -> Step {
        let job = execution.job
        let modifiedSince = execution.modifiedSince
        var request = HTTPRequest(url: primaryURL(execution), options: job.transfer)
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
        readLinks(head, &execution, events: events)
        return .next(try execution.machine.headArrived(head))
    }

    /// `.move`: the claim moves to `name` (or the next free name), and the machine is told.
    func move(to name: String, _ execution: inout Execution,
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
}
