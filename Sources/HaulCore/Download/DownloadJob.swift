/// One URL to fetch and where its file goes.
public struct DownloadJob: Sendable, Equatable {
    public var url: String
    /// Created if missing.
    public var outputDirectory: String
    /// `-O`: the file name to use instead of the server's; a name with a `/` is a path of its own.
    public var outputName: String?
    public var existingFile = ExistingFilePolicy.rename
    /// Extra request headers, "Name: value".
    public var headers: [String] = []
    public var transfer = TransferOptions()
    /// Connections for this file (Range requests), 1...16.
    public var segments = 1
    /// Retries on transient errors, each resuming where the last attempt stopped.
    public var retries = 5
    /// Continue from `NAME.part` and its state file when they match this URL.
    public var resume = true

    public init(url: String, outputDirectory: String, outputName: String? = nil) {
        self.url = url
        self.outputDirectory = outputDirectory
        self.outputName = outputName
    }
}

/// What a download tells its reporter while it runs.
public enum DownloadEvent: Sendable, Equatable {
    /// The server answered and the file name is settled; bytes go to `path` + ".part".
    case started(file: String, path: String, total: Int64?)
    case progress(DownloadProgress)
    /// Something the user should know that does not stop the download.
    case notice(String)
}

/// A finished download.
public struct DownloadResult: Sendable, Equatable {
    /// The file's name and where it is.
    public var file: String
    public var path: String
    public var bytes: Int64
    /// The target existed and `--skip-existing` left it alone.
    public var skipped: Bool
}
