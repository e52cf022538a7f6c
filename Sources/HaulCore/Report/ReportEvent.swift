import Glibc

/// What a front end hears about a run of downloads; ids count from 1 in the order given.
package enum ReportEvent: Sendable, Equatable {
    case started(id: Int, url: String, file: String, path: String, total: Int64?)
    case progress(id: Int, url: String, file: String, DownloadProgress)
    /// Something that happened to a download and did not stop it.
    case fact(id: Int, url: String, file: String, DownloadFact)
    case done(id: Int, url: String, result: DownloadResult, seconds: Double)
    case failed(id: Int, url: String, file: String, error: HaulError)
    case summary(RunSummary)
}

/// The one-line failure message of the SPEC: `haul: NAME: what happened (URL)`.
func failureLine(file: String, url: String, error: HaulError) -> String {
    "haul: \(file): \(error.message) (\(url))"
}
