import HaulCore

/// How a `DownloadState` is spelled in the `state` column (the words of `haul ls --json`); a failure's
/// category, message and reason go to `errorCategory`, `errorMessage` and `errorReason` beside it.
extension DownloadState {
    /// The `state` column is `name`: the words of `haul ls --json`. A download waiting for its time is stored
    /// as queued: whether it still waits is the next service's to decide, from its schedule and the job's
    /// start time, and the column's values (and an older haul reading them) stay as they were.
    var storedName: String { self == .scheduled ? Self.queued.name : name }

    /// The states a service re-enqueues when it starts: the ones a stopped service left mid-way, and those
    /// that waited for room (the queue checks the room again).
    static let unfinishedNames = ["queued", "connecting", "downloading", "no space"]

    /// The state a row holds. Category, message and reason of a failure are stored (not its HTTP status or
    /// Retry-After, though an HTTP status is the reason); an unknown category reads as `.other`, an unknown
    /// or missing reason as nil. Nil for a name this build does not know.
    init?(storedName: String, errorCategory: String?, errorMessage: String?, errorReason: String?) {
        let category = errorCategory.flatMap(FailureCategory.init(rawValue:)) ?? .other
        self.init(name: storedName, error: HaulError(category, errorMessage ?? "failed",
                                                     reason: errorReason.flatMap(FailureReason.init(rawValue:))))
    }

    /// Done, failed and cancelled end a run: the row gets its `finished` time.
    var endsRun: Bool {
        switch self {
        case .done, .failed, .cancelled: true
        case .queued, .scheduled, .connecting, .downloading, .paused, .noSpace: false
        }
    }
}
