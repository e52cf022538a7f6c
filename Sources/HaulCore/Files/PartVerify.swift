/// `haul verify PATH`: re-reads a part's data against its journal's block checksums. Damaged blocks leave the
/// state (durably) and the journal, so that the next run of the download fetches exactly them again.
package enum PartVerify {
    package static func run(_ path: String) throws(HaulError) -> VerifyReport {
        let directory = try OutputDirectory(FilePath.parent(of: path))
        let given = FilePath.baseName(of: path)
        // The record is named after the part: NAME.part.json and NAME.part.journal.
        let dataName: String
        let partName: String
        if FilePath.hasSuffix(given, ".part") {
            (dataName, partName) = (given, given)
        } else if directory.exists(given + ".part") {
            (dataName, partName) = (given + ".part", given + ".part")
        } else {
            (dataName, partName) = (given, given + ".part")
        }
        let stateName = ResumeState.path(forPart: partName)
        let journalName = partName + ".journal"
        let shown = FilePath.hasSeparator(path) ? directory.file(dataName) : dataName
        guard directory.exists(dataName) else { throw HaulError(.fileIO, "\(shown): no such file") }

        let part: PartFile
        switch try directory.claimPart(dataName) {
        case .created(let created):
            // It vanished between the look and the claim: nothing to check.
            try? created.close()
            directory.remove(dataName)
            throw HaulError(.fileIO, "\(shown): no such file")
        case .existing(let existing): part = existing
        case .busy: throw HaulError(.other, "\(shown) is in use by a running download; verify it once that stops")
        case .untrusted(let why): throw HaulError(.fileIO, "\(shown) \(why.phrase); not reading it")
        }
        defer { try? part.close() }

        var state: ResumeState?
        switch ResumeState.load(from: directory, name: stateName) {
        case .found(let found): state = found
        case .unreadable: throw HaulError(.fileIO, "\(directory.file(stateName)) is unreadable")
        case .missing: break
        }
        let records = WriteJournal.load(journalName, in: directory)
        guard state != nil || !records.isEmpty else {
            throw HaulError(.other, "\(shown) has no record to check it against (\(stateName), \(journalName))")
        }
        let size = try part.size()
        let check = try part.withDescriptor { fd in WriteJournal.check(records, against: fd, size: size) }

        var report = VerifyReport(path: shown, total: state?.total)
        report.good = check.goodRanges.reduce(0) { $0 + $1.count }
        report.goodBlocks = check.good.count
        report.damaged = check.damagedRanges.reduce(0) { $0 + $1.count }
        report.damagedBlocks = check.damaged.count
        let onDisk = state?.completed ?? []
        report.unchecked = bytes(in: minus(minus(onDisk, check.goodRanges), check.damagedRanges))
        if let total = state?.total {
            let known = ByteRange.merged(onDisk + check.goodRanges)
            report.missing = Swift.max(0, total - bytes(in: minus(known, check.damagedRanges)))
        }
        guard report.damaged > 0 else { return report }

        // The damaged blocks become missing: durably out of the state, and out of the journal.
        if var kept = state {
            kept.completed = minus(kept.completed, check.damagedRanges)
            try part.syncData()
            try kept.save(to: directory, name: stateName)
        }
        try directory.replace(journalName, mode: 0o600) { (file) throws(HaulError) in
            try file.write(WriteJournal.header + WriteJournal.encode(check.good), at: 0)
        }
        directory.sync()
        return report
    }

    /// `ranges` less `cuts` (both sorted and merged).
    private static func minus(_ ranges: [ByteRange], _ cuts: [ByteRange]) -> [ByteRange] {
        ranges.flatMap { ByteRange.subtract(cuts, from: $0) }
    }

    private static func bytes(in ranges: [ByteRange]) -> Int64 {
        ranges.reduce(0) { $0 + $1.count }
    }
}
