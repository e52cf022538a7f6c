extension DownloadManager {
    /// A class, so that the dictionary holds a reference: a struct this size was copied, moved and
    /// destroyed through value witnesses at each `entries[id]?.field = ...` (about a tenth of the
    /// instructions of 1000 small downloads). It never leaves the actor.
    final class Entry {
        var job: DownloadJob
        /// Its host, port and proxy (`sharesHost`): made when first asked, and again only once the URL or the
        /// proxy has changed. (Made at each change of the job before: a download's end sets its output name,
        /// and each file paid about 2,000 instructions for an origin it no longer needed.)
        var origin: String {
            if let made = originMade, made.url == job.url, made.proxy == job.transfer.proxy { return made.origin }
            let origin = CurlDriver.origin(of: job.url, proxy: job.transfer.proxy)
            originMade = OriginMade(url: job.url, proxy: job.transfer.proxy, origin: origin)
            return origin
        }
        private var originMade: OriginMade?

        private struct OriginMade {
            let url: String
            let proxy: String?
            let origin: String
        }
        var state: DownloadState = .queued
        var file: String
        /// What the user asked of the running task when it was cancelled.
        var stopIntent: DownloadState?
        /// The running task's: orders its `.downloading` against a stop's state.
        var gate: StopGate?
        /// Its live receive cap, shared by its transfers.
        let limit: ReceiveLimit
        /// A run of it claimed `job.outputName`'s part: the next run continues that one.
        var claimedBefore = false
        /// `--refresh-with`: new addresses found since the download last kept more bytes, and the most bytes
        /// a new address kept so far (`DownloadManager.refreshesWithoutProgress`).
        var refreshes = 0
        var keptAtRefresh: Int64 = 0
        /// The descriptors its running task is counted for (`descriptorBudget`); 0 when none runs.
        var descriptors = 0

        init(job: DownloadJob, state: DownloadState = .queued, file: String) {
            self.job = job
            self.state = state
            self.file = file
            limit = ReceiveLimit(job.transfer.maxReceiveRate)
        }
    }
}
