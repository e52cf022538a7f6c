/// Identifies one download in a `DownloadManager`; ids count from 1 in the order added.
package typealias DownloadID = Int

/// Where one download stands.
package enum DownloadState: Sendable, Equatable, Codable {
    case queued
    /// Waiting for its time: outside the queue's `schedule` windows, or before its `--start-at`. It starts
    /// by itself when that comes, as a queued one does.
    case scheduled
    case connecting
    case downloading
    /// Stopped by the user with `.part` kept; `resume` continues it.
    case paused
    case done
    case failed(HaulError)
    /// Stopped by the user; `.part` kept, `retry` continues it.
    case cancelled

    /// No task runs for it and none will start by itself.
    package var isFinished: Bool {
        switch self {
        case .done, .failed, .cancelled, .paused: true
        case .queued, .scheduled, .connecting, .downloading: false
        }
    }

    package var isActive: Bool {
        self == .connecting || self == .downloading
    }

    /// The word for it in `haul ls`, `--json` and on the socket: queued, scheduled, connecting, downloading,
    /// paused, done, failed, cancelled.
    package var name: String {
        switch self {
        case .queued: "queued"
        case .scheduled: "scheduled"
        case .connecting: "connecting"
        case .downloading: "downloading"
        case .paused: "paused"
        case .done: "done"
        case .failed: "failed"
        case .cancelled: "cancelled"
        }
    }

    /// The state a `name` stands for; a failure needs its error.
    package init?(name: String, error: HaulError? = nil) {
        switch name {
        case "queued": self = .queued
        case "scheduled": self = .scheduled
        case "connecting": self = .connecting
        case "downloading": self = .downloading
        case "paused": self = .paused
        case "done": self = .done
        case "failed": self = .failed(error ?? HaulError(.other, "failed"))
        case "cancelled": self = .cancelled
        default: return nil
        }
    }

    /// The exit code this outcome contributes (SPEC): paused and cancelled count as "left unfinished".
    package var exitCode: Int32 {
        switch self {
        case .done: 0
        case .failed(let error): error.category.exitCode
        case .cancelled, .paused, .queued, .scheduled, .connecting, .downloading: FailureCategory.cancelled.exitCode
        }
    }
}
