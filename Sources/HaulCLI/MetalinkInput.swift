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

    /// The downloads of this command line's metalinks (directories made absolute with `absolute`, for the
    /// service). A document that cannot be read, is not a metalink or breaks a bound stops the command: its
    /// line on stderr and its exit code. A file it names that is refused (a name that would leave the folder)
    /// is said on stderr; the others go on, and the run's exit code is at least 2.
    func metalinkDownloads(absolute: Bool) -> MetalinkDownloads {
        let files = metalinkFiles
        guard !files.isEmpty else { return .success(jobs: [], code: 0) }
        let template = jobMaker(absolute: absolute).template
        let locations = MetalinkJobs.locations(metalinkLocation)
        var jobs: [DownloadJob] = []
        var code: Int32 = 0
        for file in files {
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
