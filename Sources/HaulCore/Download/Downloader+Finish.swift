import FoundationEssentials
import Glibc

extension Downloader {
    /// Gives the part the server's time (when asked to), syncs it (unless `--no-sync`), verifies the checksum,
    /// gives `NAME.part` its name (the next free one if something appeared at `NAME` meanwhile, unless
    /// `--overwrite`), drops the state file and syncs the directory (unless `--no-sync`).
    /// The finished part's time, sync and checksum, before it takes its name.
    func makeWhole(_ claim: inout Claim, job: DownloadJob) throws(HaulError) {
        if job.remoteTime, let stamp = claim.state?.lastModified.flatMap(HTTPDate.parse) {
            // The server's Last-Modified as the file's mtime (as wget does), set before the sync, which makes it
            // durable with the data: set after it, a crash could leave the file with the time of the download.
            try? claim.part.withDescriptor { fd in
                // Access and modification time both, as wget sets them.
                let seconds = Int(stamp.timeIntervalSince1970)
                var times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0)]
                _ = futimens(fd, &times)
            }
        }
        if job.sync { try claim.part.sync() }
        if let checksum = job.checksum {
            // Computed while the bytes came when they came in order from byte 0; else read back once.
            let size = try claim.part.size()
            let actual: String
            if let streamed = claim.part.writtenDigest(size: size) {
                actual = streamed
            } else {
                let path = claim.partPath
                actual = try claim.part.withDescriptor { (fd) throws(HaulError) in
                    try FileDigest.hex(ofDescriptor: fd, path: path, algorithm: checksum.algorithm)
                }
            }
            guard actual == checksum.hex else {
                // The bytes are all there but not the ones wanted: nothing to resume, nothing to name.
                claim.removeState()
                throw HaulError(.checksum, "checksum mismatch: \(checksum.algorithm.rawValue) is \(actual), expected "
                                + "\(checksum.hex); the data stays in \(FilePath.baseName(of: claim.partPath))",
                                reason: .checksumMismatch)
            }
        }
    }

    /// The whole part takes its name (and the directory is synced).
    func name(_ claim: inout Claim, job: DownloadJob, received: Int64,
              events: (DownloadEvent) -> Void) throws(HaulError) -> DownloadResult {
        let path = try claim.place(replacing: job.existingFile == .overwrite, notice: { events(.fact($0)) })
        if job.sync { claim.directory.syncNames() }
        return DownloadResult(file: claim.name, path: path, bytes: received, skipped: false, contentType: claim.contentType)
    }
}
