import Glibc

/// What went wrong, as data, beside a failure's category and its words: set where the error is made (the
/// HTTP status check, libcurl's result, a system call's `errno`, the checksum, the stall watch) and read by
/// whatever must tell failures apart within a category (the aria2 face's `errorCode`), so that no code reads
/// meaning out of a message. nil on a `HaulError` means no finer reason is known (and on errors stored or
/// sent by an older haul).
///
/// Stored and sent as a short string (`rawValue`): "http-404", "timed-out", "disk-full", "no-room-52428800"; a
/// string this version does not know reads as nil.
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
    /// Not started: the file's `needed` bytes (those still to write) do not fit the free space of its file
    /// system, less what the running downloads there still need. Nothing was written.
    case noRoom(needed: Int64)
    /// The system refused a file operation (`EACCES`, `EPERM`).
    case permissionDenied
    /// The file system is mounted read-only (`EROFS`).
    case readOnlyFileSystem
    /// The file's digest is not the one expected.
    case checksumMismatch
    /// The address serves another file than the part holds bytes of (other validators or size): a signed link
    /// that now answers with an error page, or a file replaced on the server. With `--refresh-with`, a
    /// download stops on it and asks for a new address instead of starting over.
    case otherFile
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
        .connectionLost, .tls, .diskFull, .noRoom(needed: 1), .permissionDenied, .readOnlyFileSystem, .checksumMismatch,
        .otherFile, .remoteFileNotFound, .remoteAccessDenied, .loginRefused, .ftpCommandFailed, .hostKeyUnknown,
        .hostKeyChanged, .hostKeyMismatch,
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
        case .noRoom(let needed): "no-room-\(needed)"
        case .permissionDenied: "permission-denied"
        case .readOnlyFileSystem: "read-only-file-system"
        case .checksumMismatch: "checksum-mismatch"
        case .otherFile: "other-file"
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
        if rawValue.hasPrefix("no-room-") {
            guard let needed = Int64(rawValue.dropFirst(8)), needed > 0 else { return nil }
            self = .noRoom(needed: needed)
            return
        }
        // Past the HTTP statuses and the room needed, one spelling each.
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
