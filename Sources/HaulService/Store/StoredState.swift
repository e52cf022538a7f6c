import HaulCore

/// How a `DownloadState` is spelled in the `state` column (the words of `haul ls --json`); a failure's
/// category and message go to `errorCategory` and `errorMessage` beside it.
extension DownloadState {
    /// The `state` column is `name`: the words of `haul ls --json`.
    var storedName: String { name }

    /// The states a service re-enqueues when it starts: the ones a stopped service left mid-way.
    static let unfinishedNames = ["queued", "connecting", "downloading"]

    /// The state a row holds. Only category and message of a failure are stored (not its HTTP status or
    /// Retry-After); an unknown category reads as `.other`. Nil for a name this build does not know.
    init?(storedName: String, errorCategory: String?, errorMessage: String?) {
        let category = errorCategory.flatMap(FailureCategory.init(rawValue:)) ?? .other
        self.init(name: storedName, error: HaulError(category, errorMessage ?? "failed"))
    }

    /// Done, failed and cancelled end a run: the row gets its `finished` time.
    var endsRun: Bool {
        switch self {
        case .done, .failed, .cancelled: true
        case .queued, .connecting, .downloading, .paused: false
        }
    }
}
