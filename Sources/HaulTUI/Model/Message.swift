import HaulCore

/// Everything that can change `AppState`, from any source; the app loop feeds them to `update` one at a time.
enum Message: Sendable, Equatable {
    /// The loop has started: initial downloads and the files listing are requested.
    case started(urls: [String])
    case key(Key)
    case resize(Size)
    /// One second of the elapsed clock.
    case tick
    case manager(ManagerEvent)
    case filesLoaded(Result<[RemoteFile], FilesError>)
    case statusLoaded(String)
    /// The picture for the `v` overlay of `path`, decoded and fitted.
    case pictureLoaded(path: String, PictureCells)
    /// What a download's picture is, for its details: "4000x3000, 42 % of the rows decode".
    case pictureDescribed(DownloadID, String)
    /// SIGINT or SIGTERM, or the terminal went away: quit now, pausing downloads.
    case interrupt
    /// The overall cap in force when the screen started (the service's, or `--limit-rate`).
    case limitLoaded(Int64?)
    /// Where the service's schedule stands, loaded with the cap (`Effect.loadLimit`).
    case scheduleLoaded(ScheduleStatus?)
    /// A line for the footer (an effect that could not be carried out).
    case notice(String)
    /// What became of the connection to the service (a screen attached to it).
    case service(ServiceMessage)
}

/// The connection of an attached screen to the service, as the app loop sees it.
enum ServiceMessage: Sendable, Equatable {
    /// The event stream ended, after it had lasted `after`: the service stopped, crashed, or cannot be reached.
    case lost(after: Duration)
    /// An attempt to connect again failed, for this reason.
    case failed(String)
    /// Connected again: the service's snapshot follows.
    case connected
    /// The snapshot is whole (also at the first connection).
    case live
}

/// Why the files listing could not be shown.
struct FilesError: Error, Sendable, Equatable {
    var message: String
}
