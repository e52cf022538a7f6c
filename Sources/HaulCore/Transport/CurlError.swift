import CCurl
import Glibc

extension HaulError {
    /// Maps a libcurl result to the SPEC's categories, with curl's own words as the message; the reason
    /// from the code and the system's `errno` libcurl saw (`CURLINFO_OS_ERRNO`, 0 when none).
    init(curlCode code: CURLcode, detail: String, osErrno: Int32 = 0) {
        if Self.headerLineTooLong(code, detail) {
            self.init(.protocol, "the answer has a header line too long to read (libcurl says \"out of memory\")")
            return
        }
        let text = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        let malformed = Self.malformed(code, detail)
        self.init(malformed ? .protocol : Self.category(of: code), Self.lowercasingFirstWord(text),
                  reason: malformed ? nil : Self.reason(of: code, osErrno: osErrno))
    }

    /// A transfer ended because no data came for `seconds` (`--stall-timeout`).
    static func stalled(seconds: String) -> HaulError {
        HaulError(.network, "no data received for \(seconds) s (stalled)", reason: .stalled)
    }

    /// What a libcurl result says went wrong, with the `errno` behind it where that tells more (a connect
    /// or a receive that timed out, a refused connection).
    static func reason(of code: CURLcode, osErrno: Int32) -> FailureReason? {
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return .timedOut
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .hostNotFound
        case CURLE_COULDNT_CONNECT:
            switch osErrno {
            case ECONNREFUSED: return .connectionRefused
            case ETIMEDOUT: return .timedOut
            default: return .connectionFailed
            }
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_HTTP2,
            CURLE_HTTP2_STREAM:
            return osErrno == ETIMEDOUT ? .timedOut : .connectionLost
        // FTP's and SFTP's words for what HTTP says with a status (an HTTP answer is read by `HTTPStatus`, and
        // libcurl reports none of these for it).
        case CURLE_REMOTE_FILE_NOT_FOUND:
            return .remoteFileNotFound
        case CURLE_REMOTE_ACCESS_DENIED:
            return .remoteAccessDenied
        case CURLE_LOGIN_DENIED:
            return .loginRefused
        case CURLE_FTP_WEIRD_PASS_REPLY, CURLE_FTP_WEIRD_PASV_REPLY, CURLE_FTP_WEIRD_227_FORMAT,
            CURLE_FTP_CANT_GET_HOST, CURLE_FTP_COULDNT_SET_TYPE, CURLE_FTP_COULDNT_RETR_FILE, CURLE_FTP_PORT_FAILED,
            CURLE_FTP_COULDNT_USE_REST, CURLE_FTP_PRET_FAILED, CURLE_FTP_BAD_FILE_LIST:
            return .ftpCommandFailed
        default:
            return category(of: code) == .tls ? .tls : nil
        }
    }

    /// How libcurl 7 gives up on a header line longer than it reads (100 KiB in a head, a redirect's
    /// included; 4 KiB in a chunked body's trailer): "out of memory", with no words of its own for the head
    /// (`CURLE_OUT_OF_MEMORY`, an empty error buffer) and "Out of memory in chunked-encoding" for the trailer.
    /// Neither is this machine's memory: libcurl's small allocations do not fail on Linux, its size caps
    /// do. It is the server's answer, malformed: exit 7, and no retry (it would be the same answer).
    static func headerLineTooLong(_ code: CURLcode, _ detail: String) -> Bool {
        (code == CURLE_OUT_OF_MEMORY && detail.isEmpty)
            || (code == CURLE_RECV_ERROR && detail == "Out of memory in chunked-encoding")
    }

    /// An answer libcurl could not read, which it reports as a failed receive (`CURLE_RECV_ERROR`, the
    /// code of a reset connection too): a broken chunked encoding ("Illegal or missing hexadecimal sequence
    /// in chunked-encoding") or headers past its limit ("Too large response headers: ..."). Those are the
    /// server's answer, malformed, not the network: exit 7, and no retry would read them otherwise.
    static func malformed(_ code: CURLcode, _ detail: String) -> Bool {
        code == CURLE_RECV_ERROR
            && (detail.hasSuffix(" in chunked-encoding") || detail.hasPrefix("Too large response headers"))
    }

    /// curl's sentences start with a capital ("Could not resolve host"), ours in lower case; an acronym
    /// ("SSL certificate problem", "URL using bad/illegal format") or a name with capitals inside it
    /// ("OpenSSL/3.0.19: error:...", "GnuTLS recv error") keeps its capitals. A first word is taken as one of
    /// those when a letter after its first is upper case too.
    static func lowercasingFirstWord(_ text: String) -> String {
        guard let first = text.first else { return text }
        if text.dropFirst().prefix(while: { !$0.isWhitespace }).contains(where: \.isUppercase) { return text }
        return first.lowercased() + text.dropFirst()
    }

    static func category(of code: CURLcode) -> FailureCategory {
        switch code {
        // haul checks every URL it is given before a request (`URLCheck`: a scheme it speaks, a host), so
        // these come from what a server sent: a redirect to another scheme (`file:`, `ftp:`, `sftp:`:
        // redirects stay on HTTP) or to a malformed `Location`, or an answer that is not HTTP ("Received
        // HTTP/0.9 when not allowed", which is also what stray bytes left on a reused connection read as).
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
            .protocol
        // What an HTTP server says with 404 and 403: FTP's 550 (no such file), SFTP's "no such file", a
        // directory the login may not enter.
        case CURLE_REMOTE_FILE_NOT_FOUND, CURLE_REMOTE_ACCESS_DENIED:
            .server
        // An FTP or SSH server's answers that make no sense to libcurl, or an offset it refused (an SSH
        // server that is not one fails its banner: CURLE_SSH).
        case CURLE_WEIRD_SERVER_REPLY, CURLE_FTP_WEIRD_PASS_REPLY, CURLE_FTP_WEIRD_PASV_REPLY,
            CURLE_FTP_WEIRD_227_FORMAT, CURLE_FTP_CANT_GET_HOST, CURLE_FTP_COULDNT_SET_TYPE,
            CURLE_FTP_COULDNT_RETR_FILE, CURLE_FTP_PORT_FAILED, CURLE_FTP_COULDNT_USE_REST,
            CURLE_BAD_DOWNLOAD_RESUME, CURLE_FTP_PRET_FAILED, CURLE_FTP_BAD_FILE_LIST, CURLE_SSH:
            .protocol
        case CURLE_FTP_ACCEPT_FAILED, CURLE_FTP_ACCEPT_TIMEOUT:
            .network
        case CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT,
            CURLE_OPERATION_TIMEDOUT, CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING,
            CURLE_PARTIAL_FILE, CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_PROXY:
            .network
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
            CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_ISSUER_ERROR,
            CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CRL_BADFILE,
            CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_USE_SSL_FAILED,
            CURLE_SSL_CLIENTCERT:
            .tls
        case CURLE_LOGIN_DENIED, CURLE_AUTH_ERROR:
            .authentication
        case CURLE_RANGE_ERROR, CURLE_BAD_CONTENT_ENCODING,
            CURLE_TOO_MANY_REDIRECTS:
            .protocol
        case CURLE_WRITE_ERROR:
            .fileIO
        case CURLE_ABORTED_BY_CALLBACK:
            .cancelled
        default:
            .other
        }
    }
}
