import FoundationEssentials

/// A metalink's files as downloads: one job per file, its sources ordered (priority, then the preferred
/// locations, then the document's order), its strongest whole-file hash checked at the end and its piece hashes
/// kept for the engine. Pure: nothing here touches the disk.
///
/// Where the files go: a metalink of one file puts it in the output directory; one of several puts them in one
/// folder inside it, named after the metalink (its file name without the extension: `ubuntu.meta4` ->
/// `ubuntu/`; one given without a name, as aria2's `addMetalink` gives it, takes the name `metalink`). A file's
/// own directories (`name="dir/a.bin"`) are made below that. Each job is confined to the output directory
/// (`DownloadJob.confinedTo`): every directory below it is opened without following a link.
package enum MetalinkJobs {
    package struct Planned: Sendable, Equatable {
        package var jobs: [DownloadJob]
        /// The files refused, one line each ("file '../x': goes up out of the folder"); the others go on.
        package var refused: [String]
        /// What was left out of the document, one line each (a torrent, a source of another scheme).
        package var notes: [String] = []

        /// The files refused in one line: the first, and how many more; nil when none was.
        package var refusal: HaulError? {
            guard let first = refused.first else { return nil }
            let others = refused.count > 1 ? " (and \(refused.count - 1) more)" : ""
            return HaulError(.protocol, first + others)
        }
    }

    /// The jobs of `metalink`, each made from `template` (its options and output directory). `documentName` is
    /// the metalink's file name (nil when it has none); `locations` the preferred country codes
    /// (`--metalink-location`), most preferred first.
    package static func plan(_ metalink: Metalink, documentName: String?, template: DownloadJob,
                             locations: [String] = []) -> Planned {
        let base = template.outputDirectory
        var folder: String?
        if metalink.files.count > 1 {
            folder = documentName.map { FileNaming.sanitize(stem(of: FilePath.baseName(of: $0))) } ?? "metalink"
        }
        var planned = Planned(jobs: [], refused: [])
        for file in metalink.files {
            let name = String(file.name.prefix(200))
            let directories: [String]
            let fileName: String
            switch placement(of: file.name) {
            case .refused(let why):
                planned.refused.append("file '\(printable(name))': \(why)")
                continue
            case .placed(let below, let last):
                (directories, fileName) = (below, last)
            }
            let sources = ordered(file.urls, locations: locations)
            guard !sources.isEmpty else {
                planned.refused.append("file '\(printable(name))': no source of a scheme haul fetches")
                continue
            }
            var job = template
            job.sources = sources
            job.outputDirectory = ([folder].compactMap { $0 } + directories).reduce(base) { FilePath.join($0, $1) }
            job.outputName = fileName
            if job.outputDirectory != base { job.confinedTo = template.confinedTo ?? base }
            job.checksum = file.strongestHash
            job.pieces = file.pieces
            planned.jobs.append(job)
        }
        return planned
    }

    /// `name` cut into its directories and its file name, each a plain name as `FileNaming` takes one; or why
    /// not. A name with `..`, an absolute path, an empty part (`a//b`, a trailing `/`), a backslash, NUL or
    /// another control character is refused (it would leave the folder, or means something else elsewhere).
    static func placement(of name: String) -> Placement {
        if name.isEmpty { return .refused("has an empty name") }
        if name.hasPrefix("/") { return .refused("is an absolute path") }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return .refused("contains control characters")
        }
        if name.unicodeScalars.contains("\\") { return .refused("contains a backslash") }
        let parts = name.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        var kept: [String] = []
        for part in parts {
            if part.isEmpty { return .refused("has an empty directory part") }
            if FilePath.same(part, "..") { return .refused("goes up out of the folder (..)") }
            if FilePath.same(part, ".") { return .refused("has a '.' part") }
            if let problem = FileNaming.problem(withPlainName: part) { return .refused("'\(printable(part))' \(problem)") }
            // What a listing would not show (bidi overrides, zero-width spaces) goes, as from a server's name.
            kept.append(FileNaming.sanitize(part))
        }
        return .placed(directories: Array(kept.dropLast()), name: kept.last!)
    }

    enum Placement: Equatable {
        case placed(directories: [String], name: String)
        case refused(String)
    }

    /// Lower priority first (a source without one after those with one), then the preferred locations in the
    /// order given, then the document's order.
    package static func ordered(_ sources: [DownloadSource], locations: [String]) -> [DownloadSource] {
        let preferred = locations.map { $0.lowercased() }
        func rank(_ source: DownloadSource) -> (Int, Int) {
            let place = source.location.flatMap { preferred.firstIndex(of: $0) } ?? preferred.count
            return (source.priority ?? Int.max, place)
        }
        return sources.enumerated().sorted { a, b in
            let (ra, rb) = (rank(a.element), rank(b.element))
            return ra != rb ? ra < rb : a.offset < b.offset
        }.map(\.element)
    }

    /// `--metalink-location`'s comma-separated country codes (`de,fr`), lower-cased, empty ones left out.
    package static func locations(_ text: String?) -> [String] {
        (text ?? "").split(separator: ",").map { $0.trimmingWhitespace().lowercased() }.filter { !$0.isEmpty }
    }

    /// "ubuntu.meta4" -> "ubuntu"; "files.metalink" -> "files"; a name without those extensions stays.
    static func stem(of name: String) -> String {
        for ext in [".meta4", ".metalink", ".xml"] where name.lowercased().hasSuffix(ext) && name.count > ext.count {
            return String(name.dropLast(ext.count))
        }
        return name
    }

    /// A name as it may be shown in one line: control characters as `?`.
    static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : $0 }))
    }
}
