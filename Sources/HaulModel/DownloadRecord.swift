/// What is known of one download, from its events: the one place they are applied. The service's roster, the
/// rows of its store, the screen's rows and the line front ends' tally each hold one (beside what only they
/// keep) and change it only through `apply(_:at:)`, so that a rule about what an event means is written once.
package struct DownloadRecord: Sendable, Equatable {
    package var id: DownloadID
    /// Its password masked.
    package var url: String
    /// The file's name: the planned one until the server has answered, then the one it has.
    package var name: String
    /// Where the file goes (without `.part`), once the server has answered.
    package var path: String?
    /// The identity (`DEVICE:INODE`, `started`) of the `.part` haul created for it; the finished file keeps it
    /// (a rename keeps the inode), so it stays after the download is done: it is what tells `rm --files` that
    /// the file at `path` is the one haul wrote, not one that was there before or put there since.
    package var part: String?
    /// `rm --files` deleted what haul wrote for it: the history row says "removed with files". A new run
    /// (retry) writes new files, and the row is an ordinary one again.
    package var filesRemoved: RemovedFiles?
    /// The category of the config file that placed its file (`[categories.NAME]`), once decided; nil for none.
    package var category: String?
    package var state: DownloadState = .queued
    /// Bytes of the file on disk (with those there before a resume).
    package var completed: Int64 = 0
    /// The file's size, once known.
    package var total: Int64?
    /// The last receive rate measured, bytes per second, and when (`speed(at:)` is what to show).
    package var rate: Double = 0
    package var rateAt: Moment?
    /// Its own rate cap (the `.limited` facts, kept apart from the last fact); nil for none.
    package var limit: Int64?
    /// The last thing that happened to it without stopping it, other than a change of its cap.
    package var fact: DownloadFact?
    /// A transient failure ended an attempt and the next has not brought bytes yet (`fact` says which).
    package var waitingToRetry = false
    /// What each of its sources is doing and has brought, as last reported; empty until a download from several
    /// sources reports them.
    package var sources: [SourceStatus] = []
    /// Seconds its last run took, once done.
    package var seconds: Double?

    /// How long a download that receives nothing shows its last rate (a stall, or the silence after a rate
    /// cap's burst, showed the last rate for half a minute): then its speed is 0.
    package static let quietAfter: Duration = .seconds(2)

    package init(id: DownloadID, url: String, name: String, state: DownloadState = .queued) {
        self.id = id
        self.url = url
        self.name = name
        self.state = state
    }

    /// A new download's record, from its `added` event; nil for any other event.
    package init?(_ event: ManagerEvent) {
        guard case .added(let id, let url, let file) = event else { return nil }
        self.init(id: id, url: url, name: file)
    }

    /// Applies what `event` says of this download, which came at `now`. `added` and `removed` are its holder's
    /// to act on (it makes or drops the record) and change nothing here; so does an event of another download.
    package mutating func apply(_ event: ManagerEvent, at now: Moment) {
        switch event {
        case .state(let id, let state):
            guard id == self.id else { return }
            self.state = state
            if state.isFinished || state.isWaitingForRoom || state == .queued || state == .connecting {
                rate = 0
                rateAt = nil
                waitingToRetry = false
                Self.stillSources(&sources)
            }
            // A new run: the last one's time no longer holds, and it writes files again.
            if state == .queued || state == .connecting {
                seconds = nil
                filesRemoved = nil
            }
        case .started(let id, let file, let path, let total, let part):
            guard id == self.id else { return }
            name = file
            self.path = path
            self.total = total
            self.part = part
        case .progress(let id, let progress):
            guard id == self.id else { return }
            completed = progress.completed
            if let total = progress.total { self.total = total }
            rate = progress.bytesPerSecond
            rateAt = now
            waitingToRetry = false
        case .fact(let id, .limited(let cap)):
            guard id == self.id else { return }
            limit = cap
        case .fact(let id, .category(let name, _)):
            // Kept apart from the last fact, as the cap is: it says where the file is for as long as it is.
            guard id == self.id else { return }
            category = name
        case .fact(let id, let fact):
            guard id == self.id else { return }
            self.fact = fact
            // A new address (`haul refresh`, `u`, `changeUri`, `--refresh-with`): every face shows the one in use.
            if case .refreshed(let url, _) = fact { self.url = url }
            if case .filesRemoved(let files, let bytes) = fact { filesRemoved = RemovedFiles(files: files, bytes: bytes) }
            if case .retrying(_, _, _, let resumeAt, _) = fact {
                // What the part keeps, which an attempt that failed before its first progress never showed.
                completed = Swift.max(completed, resumeAt)
                waitingToRetry = true
            }
        case .sources(let id, let sources):
            guard id == self.id else { return }
            self.sources = sources
        case .finished(let id, let result, let seconds):
            guard id == self.id else { return }
            Self.stillSources(&sources)
            name = result.file
            path = result.path
            // `bytes` are this run's; a resumed file is bigger than that: its known size, or at least what was on
            // disk already.
            completed = total ?? Swift.max(completed, result.bytes)
            total = completed
            rate = 0
            rateAt = nil
            waitingToRetry = false
            self.seconds = seconds
        case .added, .removed, .moved:
            break
        }
    }

    /// The directory part of `path` ("/a/b/c" -> "/a/b"), for a replayed category.
    private static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Sources of a download that is not running: none fetching, none with a rate.
    private static func stillSources(_ sources: inout [SourceStatus]) {
        for index in sources.indices {
            sources[index].bytesPerSecond = 0
            sources[index].connections = 0
            if sources[index].state == .active { sources[index].state = .idle }
        }
    }

    /// Its speed at `now`: the last rate measured while it downloads, 0 once nothing has come for `quietAfter`.
    package func speed(at now: Moment) -> Double {
        guard state == .downloading, let rateAt, rateAt.duration(to: now) < Self.quietAfter else { return 0 }
        return rate
    }

    /// The events that bring a new reader's record to this one (a client attaching to the service): applied in
    /// order to `DownloadRecord(.added...)`, they give this record (its rate's moment aside).
    package var replay: [ManagerEvent] {
        var events: [ManagerEvent] = [.added(id: id, url: url, file: name)]
        if let path { events.append(.started(id: id, file: name, path: path, total: total, part: part)) }
        if completed > 0 || rate > 0 {
            events.append(.progress(id: id, DownloadProgress(completed: completed, batchBytes: 0, total: total,
                                                             bytesPerSecond: rate)))
        }
        // A row removed with its files says so even when its last fact (forgotten by a restart) was another.
        if let filesRemoved, fact != filesRemoved.fact { events.append(.fact(id: id, filesRemoved.fact)) }
        if let fact { events.append(.fact(id: id, fact)) }
        if let limit { events.append(.fact(id: id, .limited(bytesPerSecond: limit))) }
        if let category, let path {
            events.append(.fact(id: id, .category(name: category, directory: Self.directory(of: path))))
        }
        if !sources.isEmpty { events.append(.sources(id: id, sources)) }
        if state == .done, let path {
            events.append(.finished(id: id, DownloadResult(file: name, path: path, bytes: completed, skipped: false),
                                    seconds: seconds ?? 0))
        }
        if state != .queued { events.append(.state(id: id, state)) }
        return events
    }
}

/// What `rm --files` deleted of a download: how many files, how many bytes.
package struct RemovedFiles: Sendable, Equatable {
    package var files: Int
    package var bytes: Int64

    package init(files: Int, bytes: Int64) {
        self.files = files
        self.bytes = bytes
    }

    package var fact: DownloadFact { .filesRemoved(files: files, bytes: bytes) }
}
