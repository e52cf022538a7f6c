import FoundationEssentials

/// The state file on disk: `NAME.part.json`, read and replaced through the output directory.
extension ResumeState {
    /// The most a state file may hold: its ranges are merged, so even a file of thousands of holes is far below.
    static let sizeLimit = 1 << 20

    /// Reads the state file `name`; `.missing` when there is none, `.unreadable` when it cannot be trusted
    /// (not JSON of this version, too large, or not a regular file: a link there is not followed).
    static func load(from directory: OutputDirectory, name: String) -> Loaded {
        switch directory.readSmallFile(name, limit: sizeLimit) {
        case .missing: return .missing
        case .unusable: return .unreadable
        case .bytes(let bytes):
            guard let state = try? JSONDecoder().decode(ResumeState.self, from: Data(bytes)),
                state.version == formatVersion, state.isCoherent
            else { return .unreadable }
            return .found(state)
        }
    }

    /// `load` by path (tests, tools, the aria2 face's `bitfield`).
    package static func load(from path: String) -> Loaded {
        guard let directory = try? OutputDirectory(FilePath.parent(of: path)) else { return .unreadable }
        return load(from: directory, name: FilePath.baseName(of: path))
    }

    package enum Loaded: Equatable {
        case missing
        case unreadable
        case found(ResumeState)
    }

    /// Replaces the state file `name` atomically and durably (a unique temporary file created exclusively,
    /// mode 0600, fsync, rename).
    func save(to directory: OutputDirectory, name: String, durable: Bool = true) throws(HaulError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data: Data
        do { data = try encoder.encode(self) } catch { throw HaulError(.other, "cannot encode resume state") }
        try directory.replace(name, with: [UInt8](data), durable: durable)
    }

    /// `save` by path (tests and tools).
    func save(to path: String) throws(HaulError) {
        try save(to: OutputDirectory(FilePath.parent(of: path)), name: FilePath.baseName(of: path))
    }
}
