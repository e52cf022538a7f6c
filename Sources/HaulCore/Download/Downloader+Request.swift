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

    /// `.move`: the claim moves to `name` (or the next free name), in the folder of the category `sorting`
    /// names when it says so, and the machine is told. Nothing has been written yet: the empty part is
    /// released and a new one claimed, so no byte ever crosses from one file system to another.
    func move(to name: String, _ sorting: DownloadStateMachine.Sorting, _ execution: inout Execution,
              events: (DownloadEvent) -> Void) throws(HaulError) -> Step {
        let job = execution.job
        var directory = execution.claim.directory
        if case .into(let category) = sorting {
            let placed = category.flatMap {
                categories.placement(requested: $0, name: name, mediaType: nil, base: job.outputDirectory)
            }
            // Opened (created) before the old claim is let go: a folder that cannot be made (or a link at
            // its name) fails the download, and the empty part claimed for it goes.
            do {
                directory = try Self.directory(of: job, placed: placed)
            } catch {
                execution.claim.discardIfEmpty()
                throw error
            }
            execution.category = placed?.category
            if let placed { events(.fact(.category(name: placed.category, directory: placed.directory))) }
        }
        execution.claim.release()
        let taking = try Claim.take(name, in: directory, policy: job.existingFile, url: job.url,
                                    resume: job.resume, remoteTime: job.remoteTime, notice: { events(.fact($0)) })
        guard let moved = taking.claim
        else { return .end(.success(Self.nothingToFetch(taking, asked: name, in: directory, events: events))) }
        let contentType = execution.claim.contentType
        execution.claim = moved
        execution.claim.contentType = contentType
        if let checksum = job.checksum { execution.claim.part.startDigest(checksum.algorithm) }
        return .next(try execution.machine.claimMoved(to: execution.claim.name, category: execution.category,
                                                      resume: execution.claim.state))
    }

    /// Where `job`'s file named `name` goes when its category is known before the answer (asked for, or by
    /// a name given with -O); nil for none. A category asked for that the config does not have is an error.
    func placement(of job: DownloadJob, name: String) throws(HaulError) -> (category: String, directory: String)? {
        let placed = categories.placement(requested: job.category, name: name, mediaType: nil, base: job.outputDirectory)
        if let asked = job.category, asked != CategoryRules.none, placed == nil {
            throw HaulError(.usage, "no category \(asked.debugDescription) in the config file ([categories.\(asked)])")
        }
        return placed
    }

    /// The directory `job`'s file goes to: its category's folder when `placed`, else its output directory.
    static func directory(of job: DownloadJob, placed: (category: String, directory: String)?)
        throws(HaulError) -> OutputDirectory
    {
        guard let placed else { return try OutputDirectory(job.outputDirectory, below: job.confinedTo) }
        return try categoryDirectory(placed.directory)
    }

    /// A category's folder, held open as an output directory is: its parents are made (0755) when missing and
    /// followed as the user named them, but the folder itself is opened (or made, 0755) without following a
    /// link, so that a link planted at its name cannot lead the download elsewhere.
    static func categoryDirectory(_ path: String) throws(HaulError) -> OutputDirectory {
        let parent = FilePath.parent(of: path)
        if FilePath.same(parent, path) { return try OutputDirectory(path) }
        try FileSystem.makeDirectory(parent)
        return try OutputDirectory(path, below: parent)
    }
}
