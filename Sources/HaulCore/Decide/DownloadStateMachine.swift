// Decide/ holds what haul decides, as plain code: told what happened (a head, a failure, a name, bytes counted
// at an instant passed in), it says what to do, and touches no file, socket, clock or screen itself. Download/
// carries its answers out, Files/ holds what touches the disk, Transport/ the sockets. Two reads of the system
// remain: `RetryPolicy`'s random jitter, and `HTTPStatus.retryAfter`'s wall clock (an HTTP date names a moment
// of the calendar).

/// The download protocol as a pure state machine: told what happened (an answer's head arrived, a body
/// ended, a failure), it says what to do next (ask for a range, start over, take the server's name, split,
/// retry, finish). No I/O, no clock, no tasks: `Downloader` carries out its actions in one loop, as
/// async-http-client's `Transaction` does for `Transaction+StateMachine`.
///
/// One machine serves one download from its first request to its result, across retries. It keeps what the
/// protocol has learned (the request in flight, the name announced, the failures so far); the bytes, and the
/// resume state they build, belong to the executor, which passes that state in where a decision reads it.
/// An attempt is what `begin` starts: a retry begins again with the job's connections and naming, while the
/// requests within an attempt (after a refused resume, a move, a probe) keep what the attempt learned.
struct DownloadStateMachine {
    /// The Range and If-Range of a request.
    struct Request: Equatable {
        /// The first byte and the last (nil: to the end); nil for the whole file.
        var range: AskedRange?
        /// The validator that makes the server send the range only if the file is unchanged.
        var ifRange: String?
    }

    struct AskedRange: Equatable {
        var first: Int64
        var last: Int64?
    }

    /// Where an answer's body goes, and what to say before and after its first byte.
    struct Body: Equatable {
        /// The file offset of the body's first byte, and the one just past its last (nil: where the stream ends).
        var start: Int64
        var end: Int64?
        /// The whole file's size, when known.
        var total: Int64?
        /// Said first: a resume was asked for and the whole file came instead.
        var refused: DownloadFact?
        /// For a body from byte 0: the resume state to start with. The part's old bytes go.
        var fresh: ResumeState?
        /// Whether to announce the file (`.started`): the first body, or a new name or size.
        var announce = false
        /// Said once announced: the probe came back whole, so one connection it is.
        var notice: DownloadFact?
        /// The server can send the rest of this body from any byte, of this version of the file (it takes
        /// ranges, and names the version): the transfer may be ended to be refitted to a new rate cap.
        var continuable = false
    }

    /// Where a moved claim goes: the folder it is in, or the one of a category (nil: the output directory).
    enum Sorting: Equatable {
        case stay
        case into(category: String?)
    }

    /// What the executor does next.
    indirect enum Action: Equatable {
        /// Send `request` over a new transfer (the previous one is done with), then report `headArrived`.
        case request(Request)
        /// The part cannot be continued: say why, drop the resume state, and send `request` (from byte 0).
        case restart(why: DownloadFact, Request)
        /// The server names the file, or its name or media type puts it in another category: take that name
        /// (a free one by the existing-file policy), in the category's folder when `sorting` says so, then
        /// report `claimMoved`.
        case move(to: String, sorting: Sorting = .stay)
        /// Write the answer's body into the part, then report `bodyEnded`.
        case stream(Body)
        /// Fetch the file of `total` bytes over the job's connections, then report `segmentsEnded` (or
        /// `segmentRefused`): the answer in hand is the first connection's, with `first` its body (set up as
        /// `stream`'s is); the other connections start now, each on a range of its own.
        case segmented(first: Body, total: Int64)
        /// Segments were refused: say why, and go on with `then` over one connection.
        case oneConnection(why: DownloadFact, then: Action)
        /// Say `fact` (a retry), wait `after`, then `begin` again.
        case retry(after: Duration, DownloadFact)
        /// The part is the whole file: sync, verify and name it; `received` bytes came in this attempt.
        /// `announce`: a size to announce first (nothing was announced yet).
        case finish(received: Int64, announce: Int64?)
        /// The download failed for good.
        case fail(HaulError)
        /// The download was cancelled: the part stays for a later resume.
        case cancelled
    }

    /// The request in flight, and what an answer to it is checked against.
    private struct Asked {
        var request: Request
        /// The byte the request resumes at (0: from the start).
        var offset: Int64
        /// A probe: a small first range of a segmented download.
        var probing: Bool
        /// The resume state the request was made from.
        var resume: ResumeState?
    }

    /// A body being written.
    private struct Streaming {
        var start: Int64
        var total: Int64?
        var probing: Bool
        var ranged: Bool
    }

    /// What holds in every state: the download's own, kept across attempts.
    private struct Run {
        /// The claim's file name, as the executor reported it.
        var name: String
        /// The category whose folder the claim is in (nil: the output directory's).
        var category: String?
        var failures = 0
        /// The name and size last announced with `.started` (nil: nothing announced of this part yet).
        var announced: (name: String, total: Int64?)?
        /// Bytes the run's earlier attempts added to the part (kept for this one to resume from): the result
        /// counts every byte of this run, as its time does.
        var earlier: Int64 = 0

        var partName: String { name + ".part" }
    }

    /// What one attempt has learned, from `begin` to its end: connections wanted (1 after a fallback), whether
    /// the server may still name the file, and bytes of earlier bodies the result counts (a probe's, when the
    /// rest comes over one connection).
    private struct Attempt {
        var segments: Int
        /// A segment's range was refused this attempt: the rest comes over one connection from the prefix on.
        var rangesRefused = false
        var renamable: Bool
        /// Whether the answer may still put the file in another category (the job's are by the rules).
        var sortable: Bool
        var carried: Int64
        /// The bytes the part held, by its resume state, when this attempt began.
        var base: Int64
    }

    /// Where the download stands. Every state carries the run; those within an attempt carry the attempt
    /// too, so that nothing an attempt learned outlives it (a retry begins with none of it).
    private enum State {
        /// Between attempts, or before the first.
        case idle(Run)
        case asked(Run, Attempt, Asked)
        /// The answer to `asked` names another file; its body waits for the claim to move.
        case moving(Run, Attempt, Asked, ResponseHead)
        case streaming(Run, Attempt, Streaming)
        /// The segments are fetching the `rest` bytes that were missing.
        case segmenting(Run, Attempt, rest: Int64)
        /// The part is whole: the executor syncs, verifies and names it (a failure there still ends the attempt).
        case finishing(Run, Attempt)
    }

    private let url: String
    private let connections: Int
    private let retries: Int
    private let renamableByJob: Bool
    /// The config's categories, when the job is placed by them (`category` nil): decided at each answer that
    /// may still name the file, from its final name and media type.
    private let sorting: CategoryRules?
    /// `-O`'s name, which a claim moved to a category's folder asks for there.
    private let givenName: String?
    private let retryPolicy: RetryPolicy
    /// The job has `--refresh-with`: an address that now serves another file than the part's ends the attempt
    /// (`otherFile`) so that the command finds a new one, where a download without it starts over.
    private let refreshesOnOtherFile: Bool

    private var state: State

    /// - Parameters:
    ///   - name: the file name the download claimed first.
    /// `sorting`: the categories that place the file by the answer; `category`: the one whose folder the claim
    /// `name` is in.
    init(job: DownloadJob, name: String, retryPolicy: RetryPolicy, sorting: CategoryRules? = nil,
         category: String? = nil) {
        url = job.url
        self.sorting = sorting.flatMap { $0.isEmpty ? nil : $0 }
        connections = job.segments
        retries = job.retries
        renamableByJob = job.outputName == nil
        givenName = job.outputName
        self.retryPolicy = retryPolicy
        refreshesOnOtherFile = job.refreshWith != nil
        state = .idle(Run(name: name, category: category))
    }

    /// The claim's file name, as the executor reported it.
    var name: String { run.name }

    private var run: Run {
        switch state {
        case .idle(let run), .asked(let run, _, _), .moving(let run, _, _, _), .streaming(let run, _, _),
             .segmenting(let run, _, _), .finishing(let run, _):
            run
        }
    }

    /// The attempt under way; nil between attempts.
    private var ongoing: Attempt? {
        switch state {
        case .idle: nil
        case .asked(_, let attempt, _), .moving(_, let attempt, _, _), .streaming(_, let attempt, _),
             .segmenting(_, let attempt, _), .finishing(_, let attempt):
            attempt
        }
    }

    /// A new attempt, from the part's resume state `resume`: the job's connections and naming again.
    private func newAttempt(from resume: ResumeState?, after run: Run) -> Attempt {
        Attempt(segments: connections, renamable: renamableByJob, sortable: sorting != nil, carried: run.earlier,
                base: resume?.completedBytes ?? 0)
    }

    // MARK: facts in

    /// An attempt starts (the first, or a retry after its wait) from the claim's resume state.
    mutating func begin(resume: ResumeState?) -> Action {
        let run = self.run
        return requestContinuing(resume, run, newAttempt(from: resume, after: run))
    }

    /// The answer's status and headers arrived. Throws when the answer ends the attempt (an error status,
    /// a body that belongs nowhere).
    mutating func headArrived(_ head: ResponseHead) throws(HaulError) -> Action {
        guard case .asked(let run, var attempt, let asked) = state else {
            preconditionFailure("a head arrived with no request out")
        }
        if head.status == 416 && asked.offset > 0 {
            // Nothing left to send: the part is already whole, if the size the server states is what is on disk.
            let resume = asked.resume
            if let size = head.unsatisfiedRangeTotal, size == asked.offset, resume?.total.map({ $0 == size }) ?? true,
                head[.eTag].map({ $0 == resume?.etag }) ?? true
            {
                state = .finishing(run, attempt)
                return .finish(received: attempt.carried, announce: run.announced == nil ? size : nil)
            }
            return .restart(why: .resumeRefused(part: run.partName, reason: .refusedAt(offset: asked.offset)),
                            startingOver(run, &attempt))
        }
        try HTTPStatus.check(head)
        // The server may name the file differently from the URL, and its name or media type may put it in a
        // category's folder: move the claim before writing anything.
        if let move = moveOnAnswer(head, attempt, run) {
            state = .moving(run, attempt, asked, head)
            return move
        }
        return try place(head, asked: asked, resume: asked.resume, run, attempt)
    }

    /// Where the answer `head` moves the claim, if anywhere: to the server's name, and to the folder of the
    /// category that name (or the answer's media type) falls in when that is not the claim's.
    private func moveOnAnswer(_ head: ResponseHead, _ attempt: Attempt, _ run: Run) -> Action? {
        var named = run.name
        if attempt.renamable,
            let suggested = head[.contentDisposition].flatMap(FileNaming.filename(fromContentDisposition:))
        {
            let sanitized = FileNaming.sanitize(suggested)
            if sanitized != run.name && sanitized != Self.baseOf(run.name) { named = sanitized }
        }
        var sorting = Sorting.stay
        if attempt.sortable, let rules = self.sorting {
            let category = rules.category(forName: named, mediaType: head[.contentType])?.name
            if category != run.category {
                sorting = .into(category: category)
                // A claim numbered for a name taken in the old folder asks for its own name in the new one.
                if named == run.name { named = givenName ?? Self.baseOf(run.name) }
            }
        }
        guard named != run.name || sorting != .stay else { return nil }
        return .move(to: named, sorting: sorting)
    }

    /// The claim moved to `name` (the server's, or the next free one), whose resume state is `resume`. A
    /// part to resume there is asked for anew; otherwise the answer's body goes into the new part.
    mutating func claimMoved(to name: String, category: String? = nil, resume: ResumeState?) throws(HaulError) -> Action {
        guard case .moving(var run, var attempt, let asked, let head) = state else {
            preconditionFailure("moved without a move")
        }
        run.name = name
        run.category = category
        run.announced = nil  // a new part: nothing said about it yet
        attempt.renamable = false
        attempt.sortable = false
        // Kept even when the answer's body belongs nowhere: the attempt fails at the new name.
        state = .moving(run, attempt, asked, head)
        if resume != nil { return requestContinuing(resume, run, attempt) }
        return try place(head, asked: asked, resume: nil, run, attempt)
    }

    /// A body ended whole at byte `written` after `elapsed`; `resume` now records it.
    mutating func bodyEnded(at written: Int64, elapsed: Duration, resume: ResumeState?) -> Action {
        guard case .streaming(let run, var attempt, let body) = state else {
            preconditionFailure("a body ended that was not streaming")
        }
        let received = written - body.start
        // A probe whose answer did not split (a size the server will not tell): go on over one connection.
        guard body.probing, body.ranged, written < (body.total ?? .max) else {
            state = .finishing(run, attempt)
            return .finish(received: attempt.carried + received, announce: nil)
        }
        attempt.segments = 1
        attempt.carried += received
        return requestContinuing(resume, run, attempt)
    }

    /// Every missing byte came over the segments.
    mutating func segmentsEnded() -> Action {
        guard case .segmenting(let run, let attempt, let rest) = state else { preconditionFailure("not segmenting") }
        state = .finishing(run, attempt)
        return .finish(received: attempt.carried + rest, announce: nil)
    }

    /// A segment's Range request was answered with `status` (a server that advertises ranges but ignores
    /// them): the rest comes over one connection, from `resume`.
    mutating func segmentRefused(status: Int, resume: ResumeState?) -> Action {
        guard case .segmenting(let run, var attempt, _) = state else { preconditionFailure("not segmenting") }
        attempt.segments = 1
        attempt.rangesRefused = true
        return .oneConnection(why: .oneConnection(reason: .segmentRefused(status: status)),
                              then: requestContinuing(resume, run, attempt))
    }

    /// The attempt failed with `error` (`cancelled`: its task was cancelled); `resume` is what it kept.
    mutating func failed(_ error: HaulError, cancelled: Bool, resume: ResumeState?) -> Action {
        var run = self.run
        // Between attempts (the wait before a retry) there is no attempt to fail: one that adds nothing
        // stands for it, so that the bytes of the attempt before are not counted twice.
        var attempt = ongoing ?? newAttempt(from: resume, after: run)
        state = .idle(run)
        if cancelled || error.category == .cancelled { return .cancelled }
        // Ended by the engine to fit a new rate cap: the rest at once, neither counted nor told.
        if error.isRefit {
            let done = resume?.completedBytes ?? 0
            attempt.carried += Swift.max(0, done - attempt.base)
            attempt.base = done
            return requestContinuing(resume, run, attempt)
        }
        guard retryPolicy.isTransient(error), run.failures < retries else { return .fail(error) }
        run.failures += 1
        run.earlier += Swift.max(0, (resume?.completedBytes ?? 0) - attempt.base)
        state = .idle(run)
        let delay = retryPolicy.delay(afterFailure: run.failures, retryAfter: error.retryAfter)
        return .retry(after: delay, .retrying(attempt: run.failures, of: retries, delaySeconds: delay.seconds,
                                              resumeAt: resume?.contiguousPrefix ?? 0, reason: error))
    }

    /// The attempt's source failed and another takes over (a download from several sources): the attempt begins
    /// again from `resume` at once, neither waited for nor counted as a retry; its bytes count as an earlier
    /// attempt's.
    mutating func sourceChanged(resume: ResumeState?) -> Action {
        var run = self.run
        let attempt = ongoing ?? newAttempt(from: resume, after: run)
        run.earlier += Swift.max(0, (resume?.completedBytes ?? 0) - attempt.base)
        state = .idle(run)
        return begin(resume: resume)
    }

    /// The request for the whole file, the part's bytes given up: none of them is this attempt's base any more.
    private mutating func startingOver(_ run: Run, _ attempt: inout Attempt) -> Request {
        attempt.base = 0
        return request(from: nil, run, attempt)
    }

    // MARK: decisions

    /// The request that continues the part from `resume`, or starts over when it cannot be trusted.
    private mutating func requestContinuing(_ resume: ResumeState?, _ run: Run, _ attempt: Attempt) -> Action {
        var attempt = attempt
        if let resume, resume.validator == nil, !resume.completed.isEmpty {
            // Nothing to send in If-Range: a resumed range could splice two versions of the file.
            return .restart(why: .resumeRefused(part: run.partName, reason: .noValidators),
                            startingOver(run, &attempt))
        }
        return .request(request(from: resume, run, attempt))
    }

    /// Asks for the bytes after `resume`'s prefix. Segmented: the first request asks for one small range only,
    /// so learning the size and whether ranges work costs no bytes thrown away; once its answer's head says
    /// so, the other connections start at once on exact ranges while this one fetches its range.
    private mutating func request(from resume: ResumeState?, _ run: Run, _ attempt: Attempt) -> Request {
        let offset = resume?.contiguousPrefix ?? 0
        // Over one connection too when the part holds ranges past its first hole (a crash of -s N, or a
        // block `haul verify` found bad): the holes are fetched one after the other, not everything after
        // the first.
        let probing = attempt.segments > 1
            || (!attempt.rangesRefused && resume?.completed.contains { $0.start > offset } ?? false)
        var request = Request()
        if probing {
            // Up to the next range the part already holds (after a crash, other connections' ranges lie
            // beyond the prefix): the probe never fetches a byte again.
            let held = resume?.completed.first { $0.start > offset }?.start ?? .max
            request.range = AskedRange(first: offset, last: Swift.min(offset + SegmentPlan.defaultMinimumSplit, held) - 1)
            if offset > 0 { request.ifRange = resume?.validator }
        } else if offset > 0, let validator = resume?.validator {
            request.range = AskedRange(first: offset, last: nil)
            request.ifRange = validator
        }
        state = .asked(run, attempt, Asked(request: request, offset: offset, probing: probing, resume: resume))
        return request
    }

    /// Where the body of a 2xx answer goes; throws when it belongs nowhere (`ResponseCheck`).
    private mutating func place(_ head: ResponseHead, asked: Asked, resume: ResumeState?,
                                _ run: Run, _ attempt: Attempt) throws(HaulError) -> Action {
        var run = run
        var attempt = attempt
        let placement = try ResponseCheck.placement(
            of: head, asked: asked.request.range.map { ($0.first, $0.last) },
            knownTotal: asked.offset > 0 ? resume?.total : nil)
        // The answer names the version of the file it is (what If-Range pins a later request to).
        let named = head[.eTag] != nil || head[.lastModified] != nil
        if asked.offset > 0, placement.isRange, let resume,
            ResponseCheck.otherVersion(of: head, etag: resume.etag, lastModified: resume.lastModified) != nil
        {
            // The range comes from another version of the file (the server ignored If-Range), or from one it
            // does not name: the part's bytes may be another's, so the file is fetched whole.
            if refreshesOnOtherFile, named { throw Self.otherFile(head, resume) }
            return .restart(why: .resumeRefused(part: run.partName, reason: named ? .validatorsChanged : .noValidators),
                            startingOver(run, &attempt))
        }
        var body = Body(start: placement.start, end: placement.end, total: placement.total)
        body.continuable = (placement.isRange || head[.acceptRanges]?.lowercased() == "bytes") && named
        if asked.offset > 0 && !placement.isRange {
            if refreshesOnOtherFile, let resume,
                Self.refusal(head: head, state: resume) == .validatorsChanged
                    || (resume.total != nil && placement.total != nil && resume.total != placement.total)
            {
                throw Self.otherFile(head, resume)
            }
            body.refused = .resumeRefused(part: run.partName, reason: Self.refusal(head: head, state: resume))
            attempt.base = 0
        }
        if placement.start == 0 {
            body.fresh = ResumeState(url: url, etag: head[.eTag], lastModified: head[.lastModified],
                                     total: placement.total)
        }
        // Once per file: a second request for the same file (the rest after a probe) is not news.
        if run.announced?.name != run.name || run.announced?.total != placement.total {
            run.announced = (run.name, placement.total)
            body.announce = true
        }
        if asked.probing && !placement.isRange && asked.offset == 0 {
            body.notice = .oneConnection(reason: .noRanges)
        }
        // Whatever this attempt asks for after a body, it asks for this file, in this folder.
        attempt.renamable = false
        attempt.sortable = false
        if asked.probing, placement.isRange, let total = placement.total, let end = placement.end, end < total {
            // Ranges work and there is more than the probe: every connection starts now, this one with the
            // probe's range (waiting for the probe to end first costs its whole time on a slow connection).
            let kept = placement.start == 0 ? 0 : resume?.completedBytes ?? 0
            state = .segmenting(run, attempt, rest: total - kept)
            return .segmented(first: body, total: total)
        }
        state = .streaming(run, attempt, Streaming(start: placement.start, total: placement.total,
                                                   probing: asked.probing, ranged: placement.isRange))
        return .stream(body)
    }

    /// Why the server's answer to a resume request means starting over.
    /// The failure of an address that serves another file than the part's (with `--refresh-with`), saying how.
    static func otherFile(_ head: ResponseHead, _ resume: ResumeState) -> HaulError {
        let how = ResponseCheck.otherVersion(of: head, etag: resume.etag, lastModified: resume.lastModified)
            ?? "another size than the part's file"
        return HaulError(.server, "the address serves another file now (\(how))", reason: .otherFile)
    }

    static func refusal(head: ResponseHead, state: ResumeState?) -> ResumeRefusal {
        let changed = (state?.etag != nil && head[.eTag] != nil && head[.eTag] != state?.etag)
            || (state?.etag == nil && state?.lastModified != nil && head[.lastModified] != state?.lastModified)
        return changed ? .validatorsChanged : .rangeIgnored(status: head.status)
    }

    /// The unsuffixed name a renamed claim (`name.1.ext`) stands for, to avoid moving it for its own name.
    static func baseOf(_ name: String) -> String {
        let (stem, ext) = FileNaming.split(name)
        guard let dot = stem.utf8.lastIndex(of: UInt8(ascii: ".")), Int(stem[stem.utf8.index(after: dot)...]) != nil
        else { return name }
        return String(stem[..<dot]) + ext
    }
}
