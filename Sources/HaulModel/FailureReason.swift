import Glibc

/// What went wrong, as data, beside a failure's category and its words: set where the error is made (the
/// HTTP status check, libcurl's result, a system call's `errno`, the checksum, the stall watch) and read by
/// whatever must tell failures apart within a category (the aria2 face's `errorCode`), so that no code reads
/// meaning out of a message. nil on a `HaulError` means no finer reason is known (and on errors stored or
/// sent by an older haul).
///
/// Stored and sent as a short string (`rawValue`): "http-404", "timed-out", "disk-full"; a string this
/// version does not know reads as nil.
package enum FailureReason: Sendable, Hashable, Codable, RawRepresentable {
    /// The server answered this HTTP status.
    case httpStatus(Int)
    /// A connect or transfer timeout ran out (`--connect-timeout`, `--timeout`, or the system's).
    case timedOut
    /// No data came for `--stall-timeout`.
    case stalled
    /// The host refused the connection.
    case connectionRefused
    /// The host (or the proxy) name did not resolve.
    case hostNotFound
    /// The connection could not be made for another reason (unreachable network or host).
    case connectionFailed
    /// An open connection broke (reset, closed early, a send or a receive failed).
    case connectionLost
    /// The TLS handshake or a certificate check failed.
    case tls
    /// No space left on the device (`ENOSPC`).
    case diskFull
    /// The system refused a file operation (`EACCES`, `EPERM`).
    case permissionDenied
    /// The file system is mounted read-only (`EROFS`).
    case readOnlyFileSystem
    /// The file's digest is not the one expected.
    case checksumMismatch
    /// An FTP or SFTP server has no such file (FTP's 550 to `SIZE` or `RETR`, SFTP's "no such file"): what
    /// HTTP says with 404.
    case remoteFileNotFound
    /// An FTP or SFTP server refused access to the file or a directory on its way (what HTTP says with 403).
    case remoteAccessDenied
    /// An FTP or SSH server refused the login (FTP's 530, every SSH authentication method failed).
    case loginRefused
    /// An FTP command failed otherwise (`TYPE`, `REST`, `PASV`/`EPSV`, `RETR` answered out of turn).
    case ftpCommandFailed
    /// The SSH server's host key is not in `~/.ssh/known_hosts`.
    case hostKeyUnknown
    /// The SSH server's host key differs from the one `~/.ssh/known_hosts` holds for it.
    case hostKeyChanged
    /// The SSH server's host key is not the one `--ssh-host-key` names.
    case hostKeyMismatch

    /// Every reason, one of each kind (an HTTP status stands for all of them).
    package static let examples: [FailureReason] = [
        .httpStatus(404), .timedOut, .stalled, .connectionRefused, .hostNotFound, .connectionFailed,
        .connectionLost, .tls, .diskFull, .permissionDenied, .readOnlyFileSystem, .checksumMismatch,
        .remoteFileNotFound, .remoteAccessDenied, .loginRefused, .ftpCommandFailed, .hostKeyUnknown, .hostKeyChanged,
        .hostKeyMismatch,
    ]

    package var rawValue: String {
        switch self {
        case .httpStatus(let status): "http-\(status)"
        case .timedOut: "timed-out"
        case .stalled: "stalled"
        case .connectionRefused: "connection-refused"
        case .hostNotFound: "host-not-found"
        case .connectionFailed: "connection-failed"
        case .connectionLost: "connection-lost"
        case .tls: "tls"
        case .diskFull: "disk-full"
        case .permissionDenied: "permission-denied"
        case .readOnlyFileSystem: "read-only-file-system"
        case .checksumMismatch: "checksum-mismatch"
        case .remoteFileNotFound: "file-not-found"
        case .remoteAccessDenied: "access-denied"
        case .loginRefused: "login-refused"
        case .ftpCommandFailed: "ftp-command-failed"
        case .hostKeyUnknown: "host-key-unknown"
        case .hostKeyChanged: "host-key-changed"
        case .hostKeyMismatch: "host-key-mismatch"
        }
    }

    package init?(rawValue: String) {
        if rawValue.hasPrefix("http-") {
            guard let status = Int(rawValue.dropFirst(5)), (100...999).contains(status) else { return nil }
            self = .httpStatus(status)
            return
        }
        // Past the HTTP statuses, one spelling each.
        guard let reason = Self.examples.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = reason
    }

    /// The reason a failed system call's `errno` gives, for the ones anything tells apart; nil for others.
    package init?(errno code: Int32) {
        switch code {
        case ENOSPC: self = .diskFull
        case EACCES, EPERM: self = .permissionDenied
        case EROFS: self = .readOnlyFileSystem
        default: return nil
        }
    }
}
