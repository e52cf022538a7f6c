import Glibc
import NIOConcurrencyHelpers

/// A target name this download holds in its output directory: its `.part` is open and locked, and its
/// resume state, if any, is known to belong to this URL.
///
/// Choosing a free name and holding it is one step: the `.part` is created exclusively (or is a trusted one
/// left by an earlier run of this URL) and `flock`ed, under the process's namespace lock, so no two
/// downloads, in this process or another, ever write the same part file; and the finished file takes its
/// name with `RENAME_NOREPLACE`, so nothing that appeared there meanwhile is replaced.
struct Claim {
    let directory: OutputDirectory
    /// The file name the download is to get (before `finish` finds it taken).
    private(set) var name: String {
        didSet { (partName, path) = Self.names(of: name, in: directory) }
    }
    /// `NAME.part`, and the path of `NAME`: kept with the name, not made at each use (a small download
    /// asked for them ten times, each a string built and freed).
    private(set) var partName: String
    private(set) var path: String
    var part: PartFile
    /// Valid state for this URL from an earlier run, or the state this run keeps up to date.
    var state: ResumeState?
    /// The `Content-Type` of the last answer (a JPEG's decides whether a cancel leaves a preview).
    var contentType: String?
    /// A state file exists (found at the start, or written by a checkpoint): only then is there one to remove.
    private(set) var stateOnDisk = false
    /// The journal file exists (found at the start, or opened): only then is there one to remove.
    private(set) var journalOnDisk = false
    /// What the state file on disk records as done (as found, or as last written): bytes a failing
    /// download may never give back (`lastCheckpoint`).
    private var recorded: [ByteRange] = []

    var stateName: String { ResumeState.path(forPart: partName) }
    var journalName: String { Self.journalName(forPart: partName) }
    static func journalName(forPart part: String) -> String { part + ".journal" }
    var partPath: String { directory.file(partName) }

    private static func names(of name: String, in directory: OutputDirectory) -> (part: String, path: String) {
        (name + ".part", directory.file(name))
    }

    /// Takes `name` in `directory` (or, by the rename policy, the next free `name.N.ext`), locking its
    /// `.part`. nil when the policy is `.skip` and the file exists. Tells `notice` why a resume is refused
    /// or a name passed over.
    ///
    /// A name is passed over (rename policy) or refused (the others) when its `.part` is held by another
    /// download, belongs to another URL's resumable download, or is not a file haul may write into (a
    /// symbolic link, a hard link, another user's file, not a regular file); such a file is left as it is.
    ///
    /// `continuing`: this download held `name`'s `.part` a moment ago (a resume or retry right after a
    /// stop). Its lock can outlive the close by a moment when another thread of this process forked then (a
    /// hook, a helper): the child holds a copy of the descriptor until it execs. So a busy `name` is then
    /// waited for (about a second at most, without the namespace lock) before it is passed over. The wait is
    /// real time, not the downloader's clock: what it waits for is another process (a child's exec), which a
    /// test's manual clock would never move on; a test gives `wait` instead.
    static func take(_ name: String, in directory: OutputDirectory, policy: ExistingFilePolicy, url: String,
                     resume: Bool, remoteTime: Bool = true, continuing: Bool = false,
                     wait: (_ milliseconds: UInt32) -> Void = { milliseconds in
                         IOExecutor.blocking { _ = usleep(milliseconds * 1000) }
                     },
                     notice: (DownloadFact) -> Void) throws(HaulError) -> Taking
    {
        var waits: [UInt32] = continuing ? [1, 2, 4, 8, 16, 32, 64, 128, 256, 512] : []
        while true {
            switch try takeLocked(name, in: directory, policy: policy, url: url, resume: resume,
                                  remoteTime: remoteTime, waitIfBusy: !waits.isEmpty, notice: notice) {
            case .taken(let taking): return taking
            case .busy: wait(waits.removeFirst())
            }
        }
    }

    /// What `take` came to.
    enum Taking {
        /// The name (or the next free one) is held.
        case claim(Claim)
        /// `--skip-existing`, and the file exists.
        case skipped
        /// The file at `name` is this URL's, whole: an earlier run was stopped after the file took its name
        /// and before its state file went (`place` renames first). The state is gone now; nothing to fetch.
        case finishedEarlier(name: String)

        var claim: Claim? {
            if case .claim(let claim) = self { claim } else { nil }
        }
    }

    private enum Taken {
        case taken(Taking)
        /// `name` itself is held by another and the caller waits for it.
        case busy
    }

    private static func takeLocked(_ name: String, in directory: OutputDirectory, policy: ExistingFilePolicy,
                                   url: String, resume: Bool, remoteTime: Bool, waitIfBusy: Bool,
                                   notice: (DownloadFact) -> Void)
        throws(HaulError) -> Taken
    {
        FileSystem.namespaceLock.lock()
        defer { FileSystem.namespaceLock.unlock() }
        for n in 0... {
            let candidate = FileNaming.numbered(name, n)
            // Made only for an error.
            var shown: String { directory.file(candidate) }
            let partName = candidate + ".part"
            if directory.exists(candidate) {
                let partThere = directory.exists(partName)
                // Not with --overwrite, which fetches the file again whatever is there.
                if policy != .overwrite, !partThere,
                   removeStateIfFinished(candidate, in: directory, url: url, remoteTime: remoteTime) {
                    return .taken(.finishedEarlier(name: candidate))
                }
                switch policy {
                case .skip: return .taken(.skipped)
                // Unless this URL's part is there to resume (the name was taken since): it is resumed, and the
                // file takes the next free name when it is done.
                case .rename: if !partThere { continue }
                case .overwrite:
                    // The finished file replaces a file or a link, never a directory: said now, not after the
                    // whole download (whose part, its state gone, the next run would only start over).
                    if directory.isDirectory(candidate) {
                        throw HaulError(.fileIO, "\(shown) is a directory; --overwrite replaces files only")
                    }
                }
            }
            let refusal: String
            let claimed = try directory.claimPart(partName)
            switch claimed {
            case .created(let part), .existing(let part):
                // A part created now has nothing to resume: a state file left beside it is replaced, whoever's
                // it is. One held from an earlier run: no one else writes its state, so temporaries of it are a
                // crash's leftovers, and another URL's is left for that download.
                let created = if case .created = claimed { true } else { false }
                if !created { directory.removeTemporaries(of: ResumeState.path(forPart: partName)) }
                if let claim = try Claim(directory: directory, name: candidate, part: part, url: url, resume: resume,
                                         overwrite: created || policy == .overwrite, notice: notice) {
                    return .taken(.claim(claim))
                }
                try? part.close()
                refusal = "is another URL's partial download"
            case .busy where n == 0 && waitIfBusy:
                return .busy
            case .busy:
                refusal = "is in use by another download"
            case .untrusted(let why):
                refusal = why.phrase
                notice(.partLeftAlone(part: partName, reason: .untrusted(why)))
            }
            guard policy == .rename else {
                throw HaulError(.fileIO, "\(shown).part \(refusal); not writing into it")
            }
        }
        fatalError("unreachable: the candidates never run out")
    }

    /// Whether the file at `name`, which has no `NAME.part`, is this URL's, whole, left by an earlier run that
    /// was stopped (kill -9, a power loss) after `place` gave the part its name and before it removed the
    /// state file: then the leftovers (the state, its temporaries, the journal) are removed, the state last.
    /// Told by what such a run leaves: `NAME.part.json` of this URL, knowing the size; at `name` a regular
    /// file of this user with one link and that size, and with the server's time when it was to have it; and
    /// no download holding that file (a running one of the same URL is in that window for a moment).
    private static func removeStateIfFinished(_ name: String, in directory: OutputDirectory, url: String,
                                              remoteTime: Bool) -> Bool {
        let partName = name + ".part"
        let stateName = ResumeState.path(forPart: partName)
        guard case .found(let state) = ResumeState.load(from: directory, name: stateName),
              state.belongs(to: url), let total = state.total,
              let file = directory.trustedFile(name), file.size == total,
              // Not a download of the same URL running now, between its rename and its state's removal: the
              // file is that one's, and this download takes the next name.
              !directory.isHeld(name)
        else { return false }
        if remoteTime, let stamp = state.lastModified.flatMap(HTTPDate.parse),
           file.modified != Int(stamp.timeIntervalSince1970) {
            return false
        }
        directory.remove(journalName(forPart: partName))
        directory.removeTemporaries(of: stateName)
        directory.remove(stateName)
        return true
    }

    /// nil when the part belongs to another URL's download and `overwrite` is off: that one may still be
    /// resumed, so it is left for it.
    private init?(directory: OutputDirectory, name: String, part: PartFile, url: String, resume: Bool,
                  overwrite: Bool, notice: (DownloadFact) -> Void) throws(HaulError) {
        self.directory = directory
        self.name = name
        self.part = part
        (partName, path) = Self.names(of: name, in: directory)
        let size: Int64
        if let claimed = part.claimedSize { size = claimed } else { size = try part.size() }
        switch ResumeState.load(from: directory, name: stateName) {
        case .missing:
            if size > 0 { notice(.resumeRefused(part: partName, reason: .noState)) }
        case .unreadable:
            stateOnDisk = true
            notice(.resumeRefused(part: partName, reason: .unreadableState))
        case .found(let found):
            stateOnDisk = true
            recorded = found.completed
            if !found.belongs(to: url) {
                guard overwrite else {
                    notice(.partLeftAlone(part: partName, reason: .otherURL(url: found.url)))
                    return nil
                }
                notice(.resumeRefused(part: partName, reason: .otherURL(url: found.url)))
            } else if (found.completed.last?.end ?? 0) > size {
                notice(.resumeRefused(part: partName, reason: .shorterThanState))
            } else if !resume {
                notice(.resumeRefused(part: partName, reason: .notWanted))
            } else {
                state = found
                recover(partSize: size, notice: notice)
            }
        }
        // Starting over: an earlier run's journal describes bytes that are about to go.
        if state == nil, stateOnDisk || size > 0 { directory.remove(journalName) }
    }

    /// Takes back what the journal recorded past the last checkpoint: every record whose bytes the part still
    /// holds joins the state (the next checkpoint makes them durable); the others are fetched again. The
    /// journal then goes on with the good records only.
    private mutating func recover(partSize: Int64, notice: (DownloadFact) -> Void) {
        guard var recovered = state, let journal = part.journal else { return }
        let records = WriteJournal.load(journalName, in: directory)
        let durable = recovered.completed
        let check = (try? part.withDescriptor { fd in
            WriteJournal.check(records, against: fd, size: partSize, trusted: durable)
        }) ?? WriteJournal.Check()
        recovered.completed = ByteRange.merged(recovered.completed + check.goodRanges)
        let damaged = check.damagedRanges.flatMap { ByteRange.subtract(recovered.completed, from: $0) }
            .reduce(Int64(0)) { $0 + $1.count }
        if damaged > 0 { notice(.damagedRefetched(part: partName, bytes: damaged)) }
        state = recovered
        journal.open(journalName, in: directory, with: check.good)
        journalOnDisk = journal.isOpen
    }

    /// The download has run long enough that a crash should not cost what it received: the state file (not
    /// synced: nothing in it is durable yet) and the journal go to disk, with the records held so far.
    mutating func startRecording() throws(HaulError) {
        guard let journal = part.journal, !journal.isOpen, let current = state else { return }
        if !stateOnDisk {
            try current.save(to: directory, name: stateName, durable: false)
            stateOnDisk = true
            recorded = current.completed
        }
        journal.open(journalName, in: directory)
        journalOnDisk = journal.isOpen
    }

    /// Gives the name up for another: an empty `.part` this run created is removed.
    mutating func release() {
        discardIfEmpty()
        close()
    }

    /// Closes the part and its journal.
    func close() {
        part.journal?.close()
        try? part.close()
    }

    /// Removes the `.part` when nothing was ever written to it (a failure before the first byte), even if
    /// `-s N` reserved its blocks. A state file goes with it when it records nothing done (`-s N` writes
    /// one before its segments start, and a reservation that fails comes after it): there is nothing to
    /// resume. A state that records bytes keeps the part, empty or not, for the next run to check.
    mutating func discardIfEmpty() {
        guard part.holdsOnlyReservation || (try? part.size()) == 0, directory.holds(partName, part) else { return }
        if directory.exists(stateName) {
            guard stateOnDisk, state?.completed.isEmpty ?? false else { return }
            removeState()
        }
        directory.remove(partName)
    }

    /// Drops the state file and the journal, if there are any.
    mutating func removeState() {
        if journalOnDisk {
            part.journal?.close()
            directory.remove(journalName)
            journalOnDisk = false
        }
        guard stateOnDisk else { return }
        directory.remove(stateName)
        stateOnDisk = false
        recorded = []
    }

    /// Makes the bytes so far durable and records them: fsync the data (and the journal's records of it),
    /// then replace the state file.
    /// Once the data is synced, `range` is in the state kept in memory even when the state file cannot be
    /// written (a full disk): a later checkpoint, or the last one, records it.
    mutating func checkpoint(adding range: ByteRange?) throws(HaulError) {
        guard var current = state else { return }
        try part.syncData()
        part.journal?.sync()
        if let range {
            current.add(range)
            state = current
        }
        try current.save(to: directory, name: stateName)
        stateOnDisk = true
        recorded = current.completed
        state = current
    }

    /// A checkpoint on the way (`ProgressLoop`): as `checkpoint`, except that a disk too full for the state file
    /// does not end the download. The state file wants blocks of its own, which a disk that another program
    /// filled no longer has; the part's own writes tell whether the download can go on (`-s N` writes into
    /// blocks reserved ahead of it). The state file on disk stays the last one written, true of the part if
    /// older; the next checkpoint tries again, and a download that fails makes room for its state from the
    /// part (`lastCheckpoint`).
    mutating func checkpointUnlessDiskFull(adding range: ByteRange?) throws(HaulError) {
        do {
            try checkpoint(adding: range)
        } catch where error.reason == .diskFull {}
    }

    /// The checkpoint of a download that is failing, which must leave the part resumable: as `checkpoint`, and
    /// where that fails (a disk too full for the state file, the usual reason a download fails here), room is
    /// made from the part itself and the state written again: first the blocks reserved ahead of the writes
    /// and never written (`-s N`), then the last megabyte of what came (fetched again next time). A part
    /// whose state cannot be written even so cannot be resumed: it goes, with its journal, rather than
    /// stay as debris that the next run would only start over.
    mutating func lastCheckpoint(adding range: ByteRange?) {
        do {
            try checkpoint(adding: range)
            return
        } catch {}
        guard var current = state else { return }
        if let range { current.add(range) }
        state = current
        let size = (try? part.size()) ?? 0
        var cursor: Int64 = 0
        for done in current.completed {
            if done.start > cursor { part.release(ByteRange(cursor, done.start)) }
            cursor = Swift.max(cursor, done.end)
        }
        if size > cursor { part.release(ByteRange(cursor, size)) }
        if (try? checkpoint(adding: nil)) != nil { return }
        if let last = current.completed.last {
            // Never below what the state on disk records: those bytes are promised to the next run.
            let kept = recorded.filter { $0.start < last.end && $0.end > last.start }.map(\.end).max() ?? last.start
            let cut = Swift.max(kept, (last.end - (1 << 20)) & ~4095)
            part.release(ByteRange(cut, last.end))
            current.completed = current.completed.dropLast() + (cut > last.start ? [ByteRange(last.start, cut)] : [])
            state = current
            if (try? checkpoint(adding: nil)) != nil { return }
        }
        if !stateOnDisk {
            removeState()
            directory.remove(partName)
        }
    }

    /// Gives the finished `.part` its name and drops the state file. With `replacing`, whatever is at the
    /// name is replaced (a link there is replaced, not followed); otherwise a file that appeared there
    /// during the download stays, and this one takes the next free `name.N.ext`. Returns the final path.
    mutating func place(replacing: Bool, notice: (DownloadFact) -> Void) throws(HaulError) -> String {
        guard directory.holds(partName, part) else {
            // The state and journal describe the part that was there, not what is there now: a later run must
            // not take that for this download's bytes.
            removeState()
            throw HaulError(.fileIO, "\(partPath) was replaced by something else during the download; not renaming it")
        }
        let wanted = name
        if replacing {
            try directory.rename(partName, name)
        } else {
            var n = 0
            while true {
                let candidate = FileNaming.numbered(wanted, n)
                n += 1
                // Past the first, a name whose .part exists is another download's.
                if candidate != wanted, directory.exists(candidate) || directory.exists(candidate + ".part") {
                    continue
                }
                if try directory.renameNoReplace(partName, candidate) {
                    if candidate != wanted { notice(.savedAs(wanted: wanted, savedAs: candidate)) }
                    removeState()
                    name = candidate
                    break
                }
            }
        }
        removeState()
        return path
    }
}
