/// A target path this download holds: its `.part` is open and locked, and its resume state, if any, is
/// known to belong to this URL.
struct Claim {
    var path: String
    var part: PartFile
    /// Valid state for this URL from an earlier run, or the state this run keeps up to date.
    var state: ResumeState?
    /// The `Content-Type` of the last answer (a JPEG's decides whether a cancel leaves a preview).
    var contentType: String?
    /// The path and size last announced with a `.started` event.
    var announced: (path: String, total: Int64?)?
    /// A state file exists (found at the start, or written by a checkpoint): only then is there one to remove.
    private(set) var stateOnDisk = false

    var partPath: String { path + ".part" }
    var statePath: String { ResumeState.path(forPart: partPath) }

    /// Takes `path` (or, by the rename policy, the next free `name.N.ext`), locking its `.part`.
    /// nil when the policy is `.skip` and the file exists. Tells `notice` why a resume is refused.
    static func take(_ path: String, policy: ExistingFilePolicy, url: String, resume: Bool,
                     notice: (String) -> Void) throws(HaulError) -> Claim? {
        switch policy {
        case .skip where FileSystem.exists(path):
            return nil
        case .skip, .overwrite:
            guard let part = try PartFile(claiming: path + ".part") else {
                throw HaulError(.fileIO, "\(path).part is in use by another download")
            }
            return try Claim(path: path, part: part, url: url, resume: resume, notice: notice)
        case .rename:
            let (stem, ext) = FileNaming.split(FilePath.baseName(of: path))
            let folder = FilePath.parent(of: path)
            for n in 0... {
                let candidate = n == 0 ? path : FilePath.join(folder, "\(stem).\(n)\(ext)")
                guard !FileSystem.exists(candidate) else { continue }
                if let part = try PartFile(claiming: candidate + ".part") {
                    return try Claim(path: candidate, part: part, url: url, resume: resume, notice: notice)
                }
            }
            fatalError("unreachable")
        }
    }

    private init(path: String, part: PartFile, url: String, resume: Bool, notice: (String) -> Void) throws(HaulError) {
        self.path = path
        self.part = part
        let name = FilePath.baseName(of: path)
        let size = try part.size()
        switch ResumeState.load(from: ResumeState.path(forPart: path + ".part")) {
        case .missing:
            if size > 0 { notice("\(name).part has no resume state; starting over") }
        case .unreadable:
            stateOnDisk = true
            notice("\(name).part.json is unreadable; starting over")
        case .found(let found):
            stateOnDisk = true
            if found.url != url {
                notice("\(name).part belongs to another URL (\(found.url)); starting over")
            } else if (found.completed.last?.end ?? 0) > size {
                notice("\(name).part is shorter than its state says; starting over")
            } else if !resume {
                notice("--no-resume: starting \(name) over")
            } else {
                state = found
            }
        }
    }

    /// Gives the path up for another name: an empty `.part` this run created is removed.
    func release() {
        discardIfEmpty()
        try? part.close()
    }

    /// Removes the `.part` when nothing was ever written to it (a failure before the first byte).
    func discardIfEmpty() {
        if (try? part.size()) == 0, !FileSystem.exists(statePath) { FileSystem.remove(partPath) }
    }

    /// Drops the state file, if there is one.
    mutating func removeState() {
        guard stateOnDisk else { return }
        FileSystem.remove(statePath)
        stateOnDisk = false
    }

    /// Makes the bytes so far durable and records them: fsync the data, then replace the state file.
    mutating func checkpoint(adding range: ByteRange?) throws(HaulError) {
        guard var current = state else { return }
        try part.syncData()
        if let range { current.add(range) }
        try current.save(to: statePath)
        stateOnDisk = true
        state = current
    }
}
