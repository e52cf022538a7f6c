import Foundation

/// Fetches one URL into its file: asks, names the file, streams the body into `NAME.part` through a
/// `ByteAccumulator`, then syncs and renames it into place.
public struct Downloader: Sendable {
    public let driver: CurlDriver
    public let clock: any Clock<Duration>

    public init(driver: CurlDriver = .shared, clock: any Clock<Duration> = ContinuousClock()) {
        self.driver = driver
        self.clock = clock
    }

    /// Runs the download. Cancelling the calling task stops it promptly with a `.cancelled` error and
    /// leaves `NAME.part` in place.
    public func download(_ job: DownloadJob, events: @Sendable (DownloadEvent) -> Void) async throws(HaulError)
        -> DownloadResult
    {
        try FileSystem.makeDirectory(job.outputDirectory)
        var request = HTTPRequest(url: job.url, options: job.transfer)
        request.headers = job.headers
        let transfer = driver.start(request)
        defer { transfer.cancel() }

        let head: ResponseHead
        do { head = try await transfer.head() } catch { throw HaulError.from(error) }
        try HTTPStatus.check(head)

        let name = job.outputName
            ?? FileNaming.name(contentDisposition: head["Content-Disposition"], url: head.effectiveURL)
        let path = try Self.target(for: name, in: job.outputDirectory, policy: job.existingFile)
        let file = FilePath.baseName(of: path)
        if job.existingFile == .skip, FileSystem.exists(path) {
            return DownloadResult(file: file, path: path, bytes: 0, skipped: true)
        }

        let total = head.contentLength
        events(.started(file: file, path: path, total: total))
        let partPath = path + ".part"
        let part = try PartFile(path: partPath, truncate: true)
        let completed: Int64
        do {
            let clock = self.clock
            completed = try await stream(transfer.bytes, into: part, total: total, clock: clock, events: events)
        } catch {
            throw HaulError.from(error)
        }
        if let total, completed != total {
            throw HaulError(.network, "connection closed after \(completed) of \(total) bytes")
        }
        try part.sync()
        try part.close()
        try FileSystem.rename(partPath, path)
        FileSystem.syncDirectory(FilePath.parent(of: path))
        return DownloadResult(file: file, path: path, bytes: completed, skipped: false)
    }

    /// Writes the body into the part file, reporting each batch; returns the bytes on disk.
    private func stream<C: Clock<Duration>>(_ bytes: TransferBytes, into part: PartFile, total: Int64?, clock: C,
                                            events: (DownloadEvent) -> Void) async throws -> Int64 {
        var completed: Int64 = 0
        for try await progress in ByteAccumulator(bytes, writingTo: part, total: total, clock: clock) {
            completed = progress.completed
            events(.progress(progress))
        }
        return completed
    }

    /// The path the file will take, following the policy for an existing file.
    static func target(for name: String, in directory: String, policy: ExistingFilePolicy) throws(HaulError)
        -> String
    {
        let path = name.contains("/") ? name : FilePath.join(directory, name)
        guard policy == .rename, FileSystem.exists(path) else { return path }
        let (stem, ext) = FileNaming.split(FilePath.baseName(of: path))
        let folder = FilePath.parent(of: path)
        for n in 1... {
            let candidate = FilePath.join(folder, "\(stem).\(n)\(ext)")
            if !FileSystem.exists(candidate) && !FileSystem.exists(candidate + ".part") { return candidate }
        }
        fatalError("unreachable")
    }
}
