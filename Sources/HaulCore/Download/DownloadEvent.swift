/// What a download tells its reporter while it runs.
package enum DownloadEvent: Sendable, Equatable {
    /// The server answered and the file name is settled; bytes go to `path` + ".part", the file `part`
    /// names (`PartFile.identity`: it keeps the identity when it takes its name).
    case started(file: String, path: String, total: Int64?, part: String?)
    case progress(DownloadProgress)
    /// Something the user should know that does not stop the download.
    case fact(DownloadFact)
    /// What each source of a download from several is doing (`ManagerEvent.sources`).
    case sources([SourceStatus])
}
