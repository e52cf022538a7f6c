import Glibc

/// What kind of failure ended a download; each maps to one exit code of the SPEC.
package enum FailureCategory: String, Sendable, Codable, CaseIterable {
    case other
    case usage
    case fileIO = "file-io"
    case network
    case tls
    case authentication
    case `protocol`
    case server
    case checksum
    case cancelled
    /// Stopped by SIGINT (Ctrl-C), by SIGTERM, by SIGHUP: each download took a last checkpoint first.
    case interrupted
    case terminated
    case hangUp = "hangup"

    /// The process exit code for this category (SPEC, "Exit codes").
    package var exitCode: Int32 {
        switch self {
        case .other: 1
        case .usage: 2
        case .fileIO: 3
        case .network: 4
        case .tls: 5
        case .authentication: 6
        case .protocol: 7
        case .server: 8
        case .checksum: 9
        case .cancelled: 10
        case .interrupted: 130
        case .terminated: 143
        case .hangUp: 129
        }
    }

    /// The category of a stop by `signal` (SIGINT, SIGTERM or SIGHUP), whose exit code is 128 + `signal`
    /// as a shell reports a process that signal ended; nil for other signals.
    package static func stopped(by signal: Int32) -> FailureCategory? {
        switch signal {
        case SIGINT: .interrupted
        case SIGTERM: .terminated
        case SIGHUP: .hangUp
        default: nil
        }
    }
}

/// The one error type of the engine: a category for the exit code, a typed reason for what tells failures
/// apart within it, and a one-line message for people (which no code reads for meaning).
package struct HaulError: Error, Sendable, Equatable, Codable, CustomStringConvertible {
    package var category: FailureCategory
    /// One line, lower case, no trailing period: "connection refused", "server answered 404 Not Found".
    package var message: String
    /// For HTTP answers that ended the download, the status code; for `Retry-After`, the delay asked for.
    package var httpStatus: Int?
    package var retryAfter: Duration?
    /// What went wrong, as data (`FailureReason`); nil when nothing finer than the category is known. An
    /// HTTP status given to `init` is the reason unless another is.
    package var reason: FailureReason?
    /// Set on `refit` only (nil otherwise, so that no stored error changes).
    private var refitted: Bool?

    package init(_ category: FailureCategory, _ message: String, httpStatus: Int? = nil, retryAfter: Duration? = nil,
                 reason: FailureReason? = nil) {
        self.category = category
        self.message = message
        self.httpStatus = httpStatus
        self.retryAfter = retryAfter
        self.reason = reason ?? httpStatus.map(FailureReason.httpStatus)
    }

    private enum CodingKeys: String, CodingKey {
        case category, message, httpStatus, retryAfter, reason, refitted
    }

    /// Reads what this and older versions wrote: without `reason` (an older haul's), the HTTP status is the
    /// reason if there is one, else it is unknown; a reason this version does not know (a newer haul's) is
    /// unknown too, never an error. Older readers skip the `reason` key.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        category = try container.decode(FailureCategory.self, forKey: .category)
        message = try container.decode(String.self, forKey: .message)
        httpStatus = try container.decodeIfPresent(Int.self, forKey: .httpStatus)
        retryAfter = try container.decodeIfPresent(Duration.self, forKey: .retryAfter)
        if let stored = try container.decodeIfPresent(String.self, forKey: .reason) {
            reason = FailureReason(rawValue: stored)
        } else {
            reason = httpStatus.map(FailureReason.httpStatus)
        }
        refitted = try container.decodeIfPresent(Bool.self, forKey: .refitted)
    }

    package var description: String { message }

    /// How the transfer engine ends a transfer whose receive buffer is far off its new rate cap, when its
    /// reader has said it can go on from where the transfer stopped (`Transfer.refitsToCap`): the reader asks
    /// for the rest at once, neither a failure nor a retry.
    package static let refit: HaulError = {
        var error = HaulError(.network, "ended to go on with a buffer fitted to a new rate cap")
        error.refitted = true
        return error
    }()

    /// Whether this is `refit`.
    package var isRefit: Bool { refitted == true }

    /// Wraps any error as a `HaulError`; cancellation becomes `.cancelled`.
    package static func from(_ error: any Error) -> HaulError {
        switch error {
        case let error as HaulError: error
        case is CancellationError: HaulError(.cancelled, "cancelled")
        default: HaulError(.other, String(describing: error))
        }
    }
}

/// Combines the outcomes of all downloads into the process exit code: 0 when all succeeded; otherwise the
/// lowest non-zero code other than 1, and 1 only when nothing more specific happened.
package func aggregateExitCode<S: Sequence>(_ codes: S) -> Int32 where S.Element == Int32 {
    let failures = codes.filter { $0 != 0 }
    if failures.isEmpty { return 0 }
    return failures.filter { $0 != 1 }.min() ?? 1
}
