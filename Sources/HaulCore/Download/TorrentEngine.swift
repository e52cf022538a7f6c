/// What runs the jobs of torrents and magnets (`DownloadJob.torrent`) in the queue: HaulTorrent's libtorrent
/// session. HaulCore knows it only by this, as it knows the network by the curl thread.
package protocol TorrentEngine: Sendable {
    /// Runs `job` to its end, its events as an HTTP download's (`started` once the files are laid out,
    /// `progress` of verified bytes, facts). Cancelling the calling task stops it: the resume data saved,
    /// the parts kept, so that a later run continues them.
    func download(_ job: DownloadJob, events: @escaping @Sendable (DownloadEvent) -> Void) async -> Result<DownloadResult, HaulError>
}
