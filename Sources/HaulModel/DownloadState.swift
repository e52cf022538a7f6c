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
    /// Waiting for room: its file does not fit the free space of its file system (less what the running
    /// downloads still need), or the disk filled while it downloaded. Its `.part` stays; it starts again by
    /// itself once there is room. The error says why, in one line (category `fileIO`, reason `noRoom` or
    /// `diskFull`).
    case noSpace(HaulError)

    /// No task runs for it and none will start by itself.
    package var isFinished: Bool {
        switch self {
        case .done, .failed, .cancelled, .paused: true
        case .queued, .scheduled, .connecting, .downloading, .noSpace: false
        }
    }

    /// The error of a failed download, or the reason one waits for room.
    package var error: HaulError? {
        switch self {
        case .failed(let error), .noSpace(let error): error
        default: nil
        }
    }

    /// Waiting for room (`noSpace`).
    package var isWaitingForRoom: Bool {
        if case .noSpace = self { true } else { false }
    }

    package var isActive: Bool {
        self == .connecting || self == .downloading
    }

    /// The word for it in `haul ls`, `--json` and on the socket: queued, scheduled, connecting, downloading,
    /// paused, done, failed, cancelled, no space.
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
        case .noSpace: "no space"
        }
    }

    /// The state a `name` stands for; a failure (and a wait for room) needs its error.
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
        case "no space": self = .noSpace(error ?? HaulError(.fileIO, "no space", reason: .diskFull))
        default: return nil
        }
    }

    /// The exit code this outcome contributes (SPEC): paused and cancelled count as "left unfinished".
    package var exitCode: Int32 {
        switch self {
        case .done: 0
        case .failed(let error), .noSpace(let error): error.category.exitCode
        case .cancelled, .paused, .queued, .scheduled, .connecting, .downloading: FailureCategory.cancelled.exitCode
        }
    }
}
