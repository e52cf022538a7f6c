import Dispatch
import Glibc

/// `-O -`: one download written to standard output (any descriptor) in order, as curl writes it: no `.part`,
/// no state file, nothing resumed from an earlier run, one connection. Within the run, a connection lost on
/// the way is asked again for the rest (`Range` pinned with `If-Range` to the version begun), while
/// `--retries` lasts, when the first answer named its version (ETag or Last-Modified): the reader of the pipe
/// never sees bytes of two versions spliced together. Memory holds a batch or so: the writes wait for the
/// reader, and curl pauses the transfer while they wait.
package struct StandardOutputDownload<C: Clock<Duration>>: Sendable {
    package let job: DownloadJob
    let clock: C
    let driver: CurlDriver
    let retryPolicy = RetryPolicy()

    package init(job: DownloadJob, clock: C, driver: CurlDriver = .shared) {
        self.job = job
        self.clock = clock
        self.driver = driver
    }

    /// What the answers taught so far, and what went out.
    private struct Run {
        var written: Int64 = 0
        var total: Int64?
        var etag: String?
        var lastModified: String?
        var name: String
        var meter = RateMeter()
        var digest: RunningDigest?
        var announced = false
    }

    /// Fetches the file into `descriptor`. `report` hears when it starts, its progress and how it ended (but
    /// a failure, which is thrown: a `HaulError`, `StandardOutputClosed`, or `CancellationError`).
    package func run(to descriptor: Int32, report: (ReportEvent) -> Void) async throws -> DownloadResult {
        var run = Run(name: job.plannedName, digest: job.checksum.map { RunningDigest($0.algorithm) })
        let origin = clock.now
        var failures = 0
        while true {
            do {
                try await attempt(&run, to: descriptor, origin: origin, report: report)
                break
            } catch let error as HaulError {
                // Before the first byte any transient failure is tried again; after it, only with a version to pin.
                let pinned = run.written == 0 || run.etag != nil || run.lastModified != nil
                guard retryPolicy.isTransient(error), pinned, failures < job.retries, !Task.isCancelled else { throw error }
                failures += 1
                let delay = retryPolicy.delay(afterFailure: failures, retryAfter: error.retryAfter)
                report(.fact(id: 0, url: job.url, file: run.name,
                             .retrying(attempt: failures, of: job.retries, delaySeconds: delay.seconds,
                                       resumeAt: run.written, reason: error)))
                try await clock.sleep(for: delay)
            }
        }
        try check(run)
        let seconds = origin.duration(to: clock.now).seconds
        let result = DownloadResult(file: run.name, path: "-", bytes: run.written, skipped: false)
        report(.done(id: 0, url: job.url, result: result, seconds: seconds))
        return result
    }

    /// `--checksum`: the bytes are out already, but the exit code (9) still tells the pipe's other end.
    private func check(_ run: Run) throws(HaulError) {
        guard let checksum = job.checksum else { return }
        let actual = run.digest?.hex(ofSize: run.written)
        guard actual == checksum.hex else {
            throw HaulError(.checksum, "checksum mismatch: \(checksum.algorithm.rawValue) is \(actual ?? "unknown"), "
                            + "expected \(checksum.hex) (the bytes went to standard output)", reason: .checksumMismatch)
        }
    }

    /// One request: the whole file, or the rest of it after a lost connection.
    private func attempt(_ run: inout Run, to descriptor: Int32, origin: C.Instant,
                         report: (ReportEvent) -> Void) async throws {
        var request = HTTPRequest(url: job.url, options: job.transfer)
        request.headers = job.headers
        let resuming = run.written > 0
        if resuming {
            request.range = (run.written, nil)
            request.ifRange = run.etag ?? run.lastModified
        }
        let transfer = driver.start(request, clock: clock)
        defer { transfer.cancel() }
        let head: ResponseHead
        do { head = try await transfer.head() } catch { throw HaulError.from(error) }
        try HTTPStatus.check(head)
        let placement = try ResponseCheck.placement(of: head, asked: request.range, knownTotal: run.total)
        if resuming {
            // What went out cannot be taken back: only the rest of the same version will do.
            guard placement.isRange, placement.start == run.written,
                ResponseCheck.otherVersion(of: head, etag: run.etag, lastModified: run.lastModified) == nil
            else {
                throw HaulError(.protocol, "the server would not send the rest of the same file after the connection broke "
                                + "(\(run.written) bytes were written)")
            }
        } else {
            run.total = placement.total
            run.etag = head[.eTag]
            run.lastModified = head[.lastModified]
            if let disposition = head[.contentDisposition] {
                run.name = FileNaming.name(contentDisposition: disposition, url: job.url)
            }
        }
        if !run.announced {
            run.announced = true
            report(.started(id: 0, url: job.url, file: run.name, path: "standard output", total: run.total))
        }
        do {
            for try await batch in transfer.bytes {
                try await Self.write(batch, to: descriptor)
                batch.withUnsafeBytes { run.digest?.feed($0, at: run.written) }
                run.written += Int64(batch.count)
                let seconds = origin.duration(to: clock.now).seconds
                run.meter.record(bytes: run.written, at: seconds)
                report(.progress(id: 0, url: job.url, file: run.name,
                                 DownloadProgress(completed: run.written, batchBytes: Int64(batch.count),
                                                  total: run.total, bytesPerSecond: run.meter.bytesPerSecond)))
            }
        } catch let error as StandardOutputClosed {
            throw error
        } catch let error as HaulError where error.category == .fileIO {
            throw error
        } catch {
            throw HaulError.from(error)
        }
        if let total = run.total, run.written != total {
            throw HaulError(.network, "connection closed after \(run.written) of \(total) bytes")
        }
    }

    /// Writes `batch` whole to `descriptor`: `StandardOutputClosed` when the reader went away, a file I/O error
    /// naming what else went wrong (a full disk behind a redirection).
    private static func write(_ batch: ByteBatch, to descriptor: Int32) async throws {
        // The writer's thread gets the bytes' address, never the batch: the batch stays this task's (alive
        // until this function returns, after the write) and goes back to its transfer from here, as every
        // reader's does. A batch released on the writer's thread after it resumed us went back to the curl
        // thread without an ordering the thread sanitizer could see (it reported the buffer's reuse).
        let bytes = batch.withUnsafeBytes { WrittenBytes(base: $0.baseAddress, count: $0.count) }
        let failure: Int32 = await withCheckedContinuation { continuation in
            standardOutputWriter.async {
                continuation.resume(returning: bytes.write(to: descriptor))
            }
        }
        withExtendedLifetime(batch) {}
        if failure == EPIPE { throw StandardOutputClosed() }
        if failure != 0 {
            throw HaulError(.fileIO, "writing to standard output: \(String(cString: strerror(failure)))",
                            reason: FailureReason(errno: failure))
        }
    }
}

/// A batch's bytes as the writer's thread sees them: its address and length, the batch kept alive by the task
/// that waits for the write.
private struct WrittenBytes: @unchecked Sendable {
    let base: UnsafeRawPointer?
    let count: Int

    /// Writes them whole; 0, or the `errno` that stopped the write.
    func write(to descriptor: Int32) -> Int32 {
        guard let base else { return 0 }
        var offset = 0
        while offset < count {
            let written = Glibc.write(descriptor, base + offset, count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += written
        }
        return 0
    }
}

/// The reader of the output went away (EPIPE): the download ends, quietly, as curl's does.
package struct StandardOutputClosed: Error {}

/// The writes wait for the reader on a thread of their own, not on one of the tasks' few threads (a reader
/// that stops reading would otherwise hold one of them, and with it Ctrl-C's handling).
private let standardOutputWriter = DispatchQueue(label: "haul.standard-output")
