import HaulCore

/// What `update` asks the app loop to do; the loop's `EffectRunner` carries it out against the manager, the
/// clock task and the network.
enum Effect: Sendable, Equatable {
    /// Start downloads of `urls`, each over `segments` connections, with the command line's options: queued
    /// together (one request to the service), as `haul add -i` queues them.
    case download(urls: [String], segments: Int)
    case cancel(DownloadID)
    case cancelAll
    case pause(DownloadID)
    case resume(DownloadID)
    case pauseAll
    case resumeAll
    case retry(DownloadID)
    case remove(DownloadID)
    /// `D`, confirmed: stop the download and delete what haul wrote for it (`known`); the outcome is a notice.
    case removeFiles(DownloadID, OwnFiles.Known?)

    /// `K`/`J`/`T`/`B`: move a waiting download in the queue.
    case move(DownloadID, QueuePlace)
    /// `u`: give the download this new address (the same file, its bytes kept); the outcome is a notice.
    case refresh(DownloadID, url: String)
    case startClock
    case stopClock
    /// GET `/files/list` and `/files/status` of the configured server.
    case loadFiles
    /// Decode and show the JPEG at `path` (complete or partial) in the picture overlay.
    case showPicture(path: String)
    /// Decode the JPEG at `path` to say, in a download's details, its size and how much of it decodes.
    case describePicture(DownloadID, path: String)
    /// Change one download's own cap (nil = none), at once.
    case setLimit(DownloadID, Int64?)
    /// Change the overall receive cap (nil = none), at once.
    case setOverallLimit(Int64?)
    /// `o` / `O`: open the file, or its folder, with the desktop's program (`xdg-open`).
    case open(path: String)
    /// Tell the desktop, through the terminal (OSC 9 / 777).
    case notify(String)
    /// Connect to the service again after `after` (on the loop's clock), starting it when none runs; then
    /// follow its events from the snapshot on.
    case reconnect(after: Duration)
    /// Ask the service for its overall cap and its schedule (after connecting again: it may have restarted
    /// without it; when the schedule's next change has come).
    case loadLimit
    /// Leave: restore the terminal; with `pausing`, pause every running download first (they stay resumable).
    case quit(pausing: Bool)
}

extension Effect {
    /// A request to the one who runs the downloads (the service, when attached): it cannot be delivered while
    /// the service is gone.
    var goesToTheManager: Bool {
        switch self {
        case .download, .cancel, .cancelAll, .pause, .resume, .pauseAll, .resumeAll, .retry, .remove, .removeFiles, .move, .refresh,
            .setLimit, .setOverallLimit:
            true
        case .startClock, .stopClock, .loadFiles, .showPicture, .describePicture, .open, .notify, .reconnect,
            .loadLimit, .quit:
            false
        }
    }
}
