import FoundationEssentials

/// A metalink document read and planned into downloads, the way each place that takes one needs it: a local
/// file (`haul FILE.meta4`, `--metalink FILE`), a document in memory (aria2's `addMetalink`, a URL that answered
/// one). This part touches the disk: it reads the file, and creates the output directory the jobs are
/// confined to (the engine opens every directory below it without following a link, and needs it there).
package enum MetalinkLoad {
    /// The metalink in the file at `path` as downloads made from `template`. A problem is one line naming the
    /// file (exit 2 for a document that is not a metalink or breaks a bound, 3 for one that cannot be read).
    package static func jobs(fromFile path: String, template: DownloadJob, locations: [String])
        -> Result<MetalinkJobs.Planned, HaulError>
    {
        planned(Metalink.read(path: path), name: path, template: template, locations: locations)
    }

    /// The metalink `bytes` as downloads; `name` is the document's name when it has one (a multi-file metalink's
    /// folder), `label` what its problems are said of, and `category` the kind of failure a bad document is.
    package static func jobs(fromDocument bytes: [UInt8], name: String?, label: String, category: FailureCategory,
                             template: DownloadJob, locations: [String]) -> Result<MetalinkJobs.Planned, HaulError> {
        let parsed = Metalink.parse(bytes).mapError { problem in
            MetalinkProblem(problem.message, category: problem.category == .usage ? category : problem.category)
        }
        return planned(parsed, name: name, label: label, template: template, locations: locations)
    }

    private static func planned(_ parsed: Result<Metalink, MetalinkProblem>, name: String?, label: String? = nil,
                                template: DownloadJob, locations: [String]) -> Result<MetalinkJobs.Planned, HaulError> {
        let label = label ?? name ?? "metalink"
        let metalink: Metalink
        switch parsed {
        case .success(let read): metalink = read
        case .failure(let problem): return .failure(HaulError(problem.category, "\(label): \(problem.message)"))
        }
        var planned = MetalinkJobs.plan(metalink, documentName: name, template: template, locations: locations)
        planned.refused = planned.refused.map { "\(label): \($0)" }
        planned.notes = metalink.notes.map { "\(label): \($0)" }
        if let root = planned.jobs.lazy.compactMap(\.confinedTo).first, template.confinedTo == nil {
            do {
                try FileSystem.makeDirectory(root)
            } catch {
                return .failure(error)
            }
        }
        return .success(planned)
    }
}
