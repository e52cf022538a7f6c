import FoundationEssentials

/// A link that expired keeps its bytes: a stopped download is given a new address (`haul refresh`, the TUI's
/// `u`, aria2's `changeUri`), or finds one itself (`--refresh-with`), and continues from its `.part` once
/// `SameFileCheck` has shown that the address serves the same file.
extension DownloadManager {
    /// The statuses after which `--refresh-with` asks for a new address: a signed link that expired answers
    /// one of these (401 or 403 for a bad signature, 404 or 410 for a link that is gone).
    static let refreshStatuses: Set<Int> = [401, 403, 404, 410]
    /// Whether a new address may cure a failure of this reason: a status an expired link answers, or an address
    /// that serves another file now (an error page with 200, a file replaced).
    static func refreshCures(_ reason: FailureReason?) -> Bool {
        switch reason {
        case .httpStatus(let status)?: refreshStatuses.contains(status)
        case .otherFile?: true
        default: false
        }
    }

    /// `--refresh-with` gives up after this many new addresses in a row that brought no byte.
    static let refreshesWithoutProgress = 3

    /// Gives the paused, failed or cancelled download `id` the address `url`, once it serves the same file,
    /// and queues it to continue from the bytes on disk; returns how many bytes it keeps. A running or queued
    /// one is refused (its address works, or it has not asked yet: pause it first), as is another file
    /// (`SameFileCheck`'s one line, a `.usage` error, the download left as it was).
    package func refresh(_ id: DownloadID, to url: String) async -> Result<Int64, HaulError> {
        guard let entry = entries[id] else { return .failure(HaulError(.usage, "no download with id \(id)")) }
        if let problem = URLCheck.problem(with: url) { return .failure(HaulError(.usage, problem)) }
        switch entry.state {
        case .paused, .failed, .cancelled:
            guard running[id] == nil, !refreshing.contains(id) else {
                return .failure(HaulError(.usage, "download \(id) is still stopping; try again in a moment"))
            }
        case .done: return .failure(HaulError(.usage, "download \(id) is done; there is nothing to refresh"))
        case .queued, .noSpace, .scheduled:
            return .failure(HaulError(.usage, "download \(id) is \(entry.state.name); pause it first"))
        case .connecting, .downloading:
            return .failure(HaulError(.usage, "download \(id) is running; pause it first"))
        }
        refreshing.insert(id)
        let name = entry.job.outputName ?? entry.file
        let result = await Self.check(url, job: entry.job, name: name, downloader: downloader)
        refreshing.remove(id)
        switch result {
        case .success(let outcome):
            let kept = adopt(url, outcome, name: name, id, entry)
            if entry.state != .queued { enqueue(id) } else { waiting.append(id); startWaiting() }
            return .success(kept)
        case .failure(let error):
            // Resumed meanwhile: it was passed over while its part was being checked.
            if entry.state == .queued { waiting.append(id) }
            startWaiting()
            return .failure(error)
        }
    }

    /// Runs `SameFileCheck` away from the actor, on the I/O executor (it reads the part and replaces its state).
    nonisolated static func check(_ url: String, job: DownloadJob, name: String, downloader: Downloader,
                                  rewrite: Bool = true) async -> Result<SameFileCheck.Outcome, HaulError> {
        let checker = SameFileCheck(driver: downloader.driver, clock: downloader.clock)
        return await withTaskExecutorPreference(IOExecutor.shared) {
            do throws(HaulError) {
                return .success(try await checker.check(url, for: job, name: name, rewrite: rewrite))
            } catch {
                return .failure(error)
            }
        }
    }

    /// The job takes `url` as its first source (the address first given kept as its origin), continuing the
    /// part `name` when the check kept its bytes; the faces are told. Returns the bytes kept.
    private func adopt(_ url: String, _ outcome: SameFileCheck.Outcome, name: String, _ id: DownloadID,
                       _ entry: Entry) -> Int64 {
        entry.job.refresh(to: url)
        var kept: Int64 = 0
        if case .same(let bytes) = outcome {
            kept = bytes
            entry.job.outputName = name
            entry.claimedBefore = true
        }
        continuation.yield(.fact(id: id, .refreshed(url: URLRedaction.masked(url), kept: kept)))
        return kept
    }

    /// aria2's `changeUri` on the sources of a download that is not running: each of `deleting` takes out one
    /// source of that address (as given, or as shown with its password masked), then `adding` go in at
    /// `position` (the end when nil), in order. A download that holds bytes takes an address only once
    /// `SameFileCheck` has shown that it serves the same file; one that does not is left out. The one that
    /// becomes the first source is the address its part continues from. Returns how many went out and in.
    package func changeSources(_ id: DownloadID, deleting: [String], adding: [String], at position: Int?) async
        -> Result<(deleted: Int, added: Int), HaulError>
    {
        guard let entry = entries[id] else { return .failure(HaulError(.usage, "no download with id \(id)")) }
        guard running[id] == nil, !refreshing.contains(id), !entry.state.isActive else {
            return .failure(HaulError(.usage, "download \(id) is running; pause it first"))
        }
        var sources = entry.job.sources
        var deleted = 0
        for address in deleting {
            guard let index = sources.firstIndex(where: { $0.url == address || URLRedaction.masked($0.url) == address })
            else { continue }
            sources.remove(at: index)
            deleted += 1
        }
        refreshing.insert(id)
        let name = entry.job.outputName ?? entry.file
        var at = Swift.min(position ?? sources.count, sources.count)
        var added = 0
        var kept: Int64?
        for address in adding where URLCheck.problem(with: address) == nil {
            switch await Self.check(address, job: entry.job, name: name, downloader: downloader, rewrite: at == 0) {
            case .success(let outcome):
                if at == 0, case .same(let bytes) = outcome { kept = bytes }
                sources.insert(DownloadSource(url: address), at: at)
                at += 1
                added += 1
            case .failure:
                continue
            }
        }
        refreshing.remove(id)
        defer { startWaiting() }
        guard !sources.isEmpty else { return .failure(HaulError(.usage, "a download needs at least one URI")) }
        if sources[0].url != entry.job.url, entry.job.originURL == nil { entry.job.originURL = entry.job.url }
        entry.job.sources = sources
        if let kept {
            entry.job.outputName = name
            entry.claimedBefore = true
            continuation.yield(.fact(id: id, .refreshed(url: URLRedaction.masked(sources[0].url), kept: kept)))
        }
        if entry.state == .queued { waiting.append(id) }
        return .success((deleted, added))
    }

    /// Called for a download that failed with `error` (its task has ended): when it has a `--refresh-with`
    /// command and the failure is one a new address may cure, the command runs and the download waits as
    /// queued for it (true). Past `refreshesWithoutProgress` new addresses that brought nothing, it fails with
    /// `error` and a line saying so (false, with that error).
    func refreshAutomatically(_ id: DownloadID, _ entry: Entry, _ error: HaulError, path: String?)
        -> (started: Bool, error: HaulError)
    {
        guard let hook = entry.job.refreshWith, Self.refreshCures(error.reason) else { return (false, error) }
        guard entry.refreshes < Self.refreshesWithoutProgress else {
            return (false, Self.unhelped(error, why: "\(entry.refreshes) new addresses in a row brought no byte"))
        }
        let job = entry.job
        let name = job.outputName ?? entry.file
        let stopped = URLRedaction.masked(job.url)
        let placeholders = ["url": stopped, "origin": URLRedaction.masked(job.origin), "referer": job.referer ?? ""]
        guard let argv = RefreshCommand.argv(hook, placeholders: placeholders) else {
            return (false, Self.unhelped(error, why: "'\(hook.command)' has an unclosed quote, or no command"))
        }
        let environment = [
            "HAUL_ID": String(id), "HAUL_URL": stopped, "HAUL_ORIGIN_URL": placeholders["origin"] ?? "",
            "HAUL_REFERER": placeholders["referer"] ?? "",
            "HAUL_NAME": FilePath.baseName(of: path ?? FilePath.join(job.outputDirectory, name)),
        ]
        refreshing.insert(id)
        setState(entry, id, .queued)
        let downloader = self.downloader
        Task.detached(executorPreference: IOExecutor.shared) { [self] in
            let found: Result<(String, SameFileCheck.Outcome), RefreshCommand.Failure>
            switch await RefreshCommand.run(argv, environment: environment, clock: downloader.clock) {
            case .failure(let failure):
                found = .failure(failure)
            case .success(let url):
                if let problem = URLCheck.problem(with: url) {
                    found = .failure(RefreshCommand.Failure(why: "it printed \(url.debugDescription): \(problem)"))
                } else {
                    found = await Self.check(url, job: job, name: name, downloader: downloader)
                        .map { (url, $0) }.mapError { RefreshCommand.Failure(why: $0.message) }
                }
            }
            await self.automaticRefreshEnded(id, found, original: error, name: name, path: path)
        }
        return (true, error)
    }

    /// The end of `refreshAutomatically`'s command and check: the download continues from its new address,
    /// or fails with its original error and why the command did not help. Paused or cancelled meanwhile, it
    /// keeps the new address and stays as the user left it.
    private func automaticRefreshEnded(_ id: DownloadID, _ found: Result<(String, SameFileCheck.Outcome), RefreshCommand.Failure>,
                                       original: HaulError, name: String, path: String?) {
        refreshing.remove(id)
        guard let entry = entries[id] else {
            startWaiting()
            return
        }
        switch found {
        case .success(let (url, outcome)):
            let kept = adopt(url, outcome, name: name, id, entry)
            // Progress since the last new address starts the count again.
            entry.refreshes = kept > entry.keptAtRefresh ? 1 : entry.refreshes + 1
            entry.keptAtRefresh = Swift.max(entry.keptAtRefresh, kept)
            if entry.state == .queued { waiting.append(id) }
        case .failure(let failure):
            if entry.state == .queued {
                failedForGood(id, entry, Self.unhelped(original, why: failure.why), path: path)
            }
        }
        startWaiting()
    }

    /// `error`, and why `--refresh-with` did not cure it, in its one line.
    static func unhelped(_ error: HaulError, why: String) -> HaulError {
        var told = error
        told.message += "; --refresh-with did not help: \(why)"
        return told
    }
}
