extension DownloadManager {
    /// What a hook started now waits for: the naming gate with every event so far (nil without a gate).
    func storedGate() -> (@Sendable () async -> Void)? {
        guard let namingGate else { return nil }
        let mark = eventsYielded
        return { await namingGate(mark) }
    }

    /// Runs the `--on-complete` hook of a download that `restore` found done: the service was killed after its
    /// file took its name and before the store held its "done", so the hook (which waits for that) never ran.
    /// Called once the store holds the "done" now found.
    package func runCompletionHook(_ id: DownloadID, _ result: DownloadResult) {
        guard let entry = entries[id] else { return }
        runCompletionHook(id, entry, result, after: nil)
    }

    /// The entry's job is read only when it has a hook: a copy of it costs every string it holds. `gate`
    /// too is made only then.
    func runCompletionHook(_ id: DownloadID, _ entry: Entry, _ result: DownloadResult,
                                   after gate: @autoclosure () -> (@Sendable () async -> Void)?) {
        guard let hook = entry.job.onComplete else { return }
        hooks.run(hook, name: "--on-complete", environment: Self.hookEnvironment(
            id: id, job: entry.job, path: result.path, bytes: result.bytes, error: nil), after: gate())
    }

    /// Runs the service's `--on-queue-done` command with `environment` (the queue's totals) once `gate`
    /// returns (the store holding the downloads' ends it counts), as the other hooks wait; counted from now,
    /// so a stop waits for it.
    package nonisolated func runQueueDoneHook(_ hook: Hook, environment: [String: String],
                                              after gate: @escaping @Sendable () async -> Void) {
        hooks.run(hook, name: "--on-queue-done", environment: environment, after: gate)
    }

    /// What a hook is told, in its environment: nothing secret (the URL's password is masked).
    static func hookEnvironment(id: DownloadID, job: DownloadJob, path: String, bytes: Int64?,
                                error: HaulError?) -> [String: String] {
        let absolute = FilePath.absolute(path)
        return [
            "HAUL_ID": String(id),
            "HAUL_URL": URLRedaction.masked(job.url),
            "HAUL_FILE": absolute,
            "HAUL_NAME": FilePath.baseName(of: absolute),
            "HAUL_DIR": FilePath.absolute(job.outputDirectory),
            "HAUL_SIZE": bytes.map(String.init) ?? "",
            "HAUL_STATUS": error == nil ? "done" : "failed",
            "HAUL_EXIT_CODE": String(error?.category.exitCode ?? 0),
            "HAUL_ERROR": error?.message ?? "",
        ]
    }

    /// Returns once every `--on-complete`/`--on-error` command started so far has ended (a run waits for
    /// them before it exits; they never hold a download slot).
    func waitForHooks() async {
        await hooks.waitForAll()
    }

    /// Returns once every hook has started; none waits at the naming gate any more (see `setNamingGate`).
    package func waitForHookStarts() async {
        await hooks.waitForStarts()
    }

    /// Hooks waiting at the naming gate for the store to hold their download's end.
    var hooksWaitingToStart: Int { hooks.waitingToStart }
}
