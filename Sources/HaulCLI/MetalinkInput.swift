import FoundationEssentials
import HaulCore

/// The metalinks of a command line: `--metalink FILE` (any name), and each argument that names an existing
/// local file ending in `.meta4` or `.metalink`. Each becomes one download per file it describes.
extension HaulCommand {
    /// Whether `argument` is a metalink file rather than a URL.
    static func isMetalinkFile(_ argument: String) -> Bool {
        guard Metalink.hasMetalinkExtension(argument), !argument.contains("://") else { return false }
        var isDirectory = false
        return FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory) && !isDirectory
    }

    /// The arguments that are URLs (not metalink files).
    var plainURLs: [String] { urls.filter { !Self.isMetalinkFile($0) } }

    /// Every metalink file of this command line, in order.
    var metalinkFiles: [String] { metalink + urls.filter(Self.isMetalinkFile) }

    /// An input file's entries parted into the URLs and the metalink files: a line that names an existing
    /// local `.meta4` or `.metalink` file, alone (no mirror after it), is that metalink, as the same name on
    /// the command line is (aria2's input files take them so too).
    static func separatingMetalinks(_ entries: [InputEntry]) -> (urls: [InputEntry], metalinks: [InputEntry]) {
        guard entries.contains(where: { $0.mirrors.isEmpty && isMetalinkFile($0.url) }) else { return (entries, []) }
        var urls: [InputEntry] = []
        var metalinks: [InputEntry] = []
        for entry in entries {
            if entry.mirrors.isEmpty && isMetalinkFile(entry.url) { metalinks.append(entry) } else { urls.append(entry) }
        }
        return (urls, metalinks)
    }

    /// The downloads of this command line's metalinks, then of `listed` (an input file's, each with the
    /// options of its indented lines over the command line's; `out=` and `checksum=` give way to the
    /// document's names and hashes), directories made absolute with `absolute` (for the service). A document
    /// that cannot be read, is not a metalink or breaks a bound stops the command: its line on stderr and its
    /// exit code. A file it names that is refused (a name that would leave the folder) is said on stderr; the
    /// others go on, and the run's exit code is at least 2.
    func metalinkDownloads(absolute: Bool, listed: [InputEntry] = []) -> MetalinkDownloads {
        let files = metalinkFiles.map { InputEntry(url: $0) } + listed
        guard !files.isEmpty else { return .success(jobs: [], code: 0) }
        let base = jobMaker(absolute: absolute).template
        let locations = MetalinkJobs.locations(metalinkLocation)
        var jobs: [DownloadJob] = []
        var code: Int32 = 0
        for entry in files {
            let file = entry.url
            var template = base
            entry.options.apply(to: &template, absolute: absolute)
            switch MetalinkLoad.jobs(fromFile: file, template: template, locations: locations) {
            case .failure(let error):
                TextOutput.standard.err("haul: \(error.message)")
                return .failure(error.category.exitCode)
            case .success(let planned):
                if !quiet { for note in planned.notes { TextOutput.standard.err("haul: \(note)") } }
                for line in planned.refused { TextOutput.standard.err("haul: \(line)") }
                if !planned.refused.isEmpty { code = FailureCategory.usage.exitCode }
                jobs += planned.jobs
            }
        }
        return .success(jobs: jobs, code: code)
    }
}

enum MetalinkDownloads {
    /// The jobs, and the exit code the run ends with at least (2 when a file was refused, else 0).
    case success(jobs: [DownloadJob], code: Int32)
    case failure(Int32)
}
