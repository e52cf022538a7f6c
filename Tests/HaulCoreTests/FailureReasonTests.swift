import CCurl
import Foundation
import Glibc
import SampleServer
import TestSupport
import Testing
@testable import HaulCore

/// A failure's typed reason is set where the error is made, beside the same message as before, and travels
/// as data: encoded, decoded, and read back from what an older haul wrote.
@Suite struct FailureReasonTests {
    static func head(_ status: Int) -> ResponseHead {
        ResponseHead(status: status, headers: [], effectiveURL: "http://h/")
    }

    @Test(arguments: [(404, FailureCategory.server), (410, .server), (503, .server), (500, .server),
                      (401, .authentication), (407, .authentication), (416, .protocol), (304, .protocol)])
    func anHTTPStatusIsTheReason(status: Int, category: FailureCategory) {
        let error = #expect(throws: HaulError.self) { try HTTPStatus.check(Self.head(status)) }
        #expect(error?.category == category)
        #expect(error?.reason == .httpStatus(status))
        #expect(error?.httpStatus == status)
    }

    @Test func libcurlsResultAndErrnoGiveTheReason() {
        let cases: [(CURLcode, String, Int32, FailureReason?, FailureCategory)] = [
            (CURLE_OPERATION_TIMEDOUT, "Operation timed out after 30001 milliseconds with 0 bytes received", 0,
             .timedOut, .network),
            (CURLE_OPERATION_TIMEDOUT, "Failed to connect to h port 80 after 3001 ms: Timeout was reached", 0,
             .timedOut, .network),
            (CURLE_COULDNT_CONNECT, "Failed to connect to 127.0.0.1 port 1 after 0 ms: Couldn't connect to server",
             ECONNREFUSED, .connectionRefused, .network),
            (CURLE_COULDNT_CONNECT, "Failed to connect to 10.0.0.1 port 80 after 129000 ms: Couldn't connect to server",
             ETIMEDOUT, .timedOut, .network),
            (CURLE_COULDNT_CONNECT, "Failed to connect to 10.0.0.1 port 80 after 1 ms: Couldn't connect to server",
             ENETUNREACH, .connectionFailed, .network),
            (CURLE_COULDNT_RESOLVE_HOST, "Could not resolve host: nowhere", 0, .hostNotFound, .network),
            (CURLE_COULDNT_RESOLVE_PROXY, "Could not resolve proxy: nowhere", 0, .hostNotFound, .network),
            (CURLE_RECV_ERROR, "Recv failure: Connection reset by peer", ECONNRESET, .connectionLost, .network),
            (CURLE_RECV_ERROR, "Recv failure: Connection timed out", ETIMEDOUT, .timedOut, .network),
            (CURLE_PARTIAL_FILE, "transfer closed with 10 bytes remaining to read", 0, .connectionLost, .network),
            (CURLE_PEER_FAILED_VERIFICATION, "SSL: no alternative certificate subject name matches", 0, .tls, .tls),
            (CURLE_SSL_CONNECT_ERROR, "OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number", 0, .tls, .tls),
            // The server's answer, malformed: a protocol error with no finer reason.
            (CURLE_RECV_ERROR, "Illegal or missing hexadecimal sequence in chunked-encoding", 0, nil, .protocol),
            (CURLE_OUT_OF_MEMORY, "", 0, nil, .protocol),
            // FTP's and SFTP's answers: what HTTP says with a status.
            (CURLE_LOGIN_DENIED, "Access denied: 530", 0, .loginRefused, .authentication),
            (CURLE_LOGIN_DENIED, "Authentication failure", 0, .loginRefused, .authentication),
            (CURLE_REMOTE_FILE_NOT_FOUND, "Remote file not found", 0, .remoteFileNotFound, .server),
            (CURLE_REMOTE_ACCESS_DENIED, "Server denied you to change to the given directory", 0,
             .remoteAccessDenied, .server),
            (CURLE_FTP_COULDNT_USE_REST, "Couldn't use REST", 0, .ftpCommandFailed, .protocol),
            (CURLE_FTP_WEIRD_PASV_REPLY, "Bad PASV/EPSV response: 500", 0, .ftpCommandFailed, .protocol),
        ]
        for (code, detail, osErrno, reason, category) in cases {
            let error = HaulError(curlCode: code, detail: detail, osErrno: osErrno)
            #expect(error.reason == reason, "\(detail)")
            #expect(error.category == category, "\(detail)")
            // The words are libcurl's, as without the errno.
            #expect(error.message == HaulError(curlCode: code, detail: detail).message)
        }
    }

    @Test func aStallIsItsOwnReasonWithTheSameWords() {
        let error = HaulError.stalled(seconds: "5")
        #expect(error == HaulError(.network, "no data received for 5 s (stalled)", reason: .stalled))
    }

    @Test(arguments: [(ENOSPC, FailureReason?.some(.diskFull)), (EACCES, .permissionDenied),
                      (EPERM, .permissionDenied), (EROFS, .readOnlyFileSystem), (EIO, nil), (EDQUOT, nil)])
    func aFileErrorsErrnoGivesTheReason(code: Int32, reason: FailureReason?) {
        let error = PartFile.error("cannot write", "/d/a.bin.part", code)
        #expect(error.category == .fileIO)
        #expect(error.reason == reason)
        #expect(error.message == "cannot write /d/a.bin.part: \(String(cString: strerror(code)))")
    }

    /// Through the transfer engine: libcurl's `errno` reaches the error (`CURLINFO_OS_ERRNO`).
    @Test func aRefusedConnectionSaysSo() async throws {
        let transfer = CurlDriver.shared.start(HTTPRequest(url: "http://127.0.0.1:1/x"))
        let error = await #expect(throws: HaulError.self) { try await transfer.head() }
        #expect(error?.reason == .connectionRefused)
        #expect(error?.category == .network)
    }

    /// `--checksum-file` words a bad digest from the problem as data, not by cutting `--checksum`'s words.
    @Test func aChecksumsProblemIsWordedForEachOption() {
        func message(_ result: Result<Checksum, HaulError>) -> String? {
            if case .failure(let error) = result { return error.message }
            return nil
        }
        func message(_ result: Result<[String: Checksum], HaulError>) -> String? {
            if case .failure(let error) = result { return error.message }
            return nil
        }
        #expect(message(Checksum.parse("sha256=abc")) == "--checksum: a sha256 digest is 64 hex digits")
        #expect(message(Checksum.parse("crc32=00")) == "--checksum wants sha512=HEX, sha256=HEX, sha1=HEX or md5=HEX")
        #expect(message(ChecksumFile.parse("SHA256 (a.bin) = abc\n", source: "SUMS"))
                == "--checksum-file SUMS line 1: a sha256 digest is 64 hex digits")
    }

    // MARK: as data

    @Test(arguments: FailureReason.examples + [.httpStatus(410), .httpStatus(503)])
    func everyReasonSurvivesItsSpelling(reason: FailureReason) throws {
        #expect(FailureReason(rawValue: reason.rawValue) == reason)
        let error = HaulError(.other, "x", reason: reason)
        let back = try JSONDecoder().decode(HaulError.self, from: JSONEncoder().encode(error))
        #expect(back == error)
        #expect(back.reason == reason)
    }

    @Test func spellingsAreShortWords() {
        #expect(FailureReason.httpStatus(404).rawValue == "http-404")
        #expect(FailureReason.diskFull.rawValue == "disk-full")
        #expect(FailureReason.timedOut.rawValue == "timed-out")
        for unknown in ["", "http-", "http-abc", "http-99", "http-1000", "a-newer-reason", "Disk-Full"] {
            #expect(FailureReason(rawValue: unknown) == nil, "\(unknown)")
        }
    }

    /// What an older haul stored or sent has no `reason`: it decodes, its reason unknown (an HTTP status,
    /// when it has one, is the reason); a reason a newer haul knows and this one does not is unknown too.
    @Test func olderAndNewerRecordsDecode() throws {
        func decoded(_ json: String) throws -> HaulError {
            try JSONDecoder().decode(HaulError.self, from: Data(json.utf8))
        }
        let old = try decoded(#"{"category":"network","message":"connection refused"}"#)
        #expect(old == HaulError(.network, "connection refused"))
        #expect(old.reason == nil)
        let oldHTTP = try decoded(#"{"category":"server","message":"server answered 404 Not Found","httpStatus":404}"#)
        #expect(oldHTTP.reason == .httpStatus(404))
        let newer = try decoded(#"{"category":"network","message":"x","reason":"quantum-decoherence"}"#)
        #expect(newer == HaulError(.network, "x"))
        #expect(newer.reason == nil)
    }

    /// An error without a reason is written as before (no `reason` key); one with a reason gains one key,
    /// which an older reader (the shape before it) skips.
    @Test func olderReadersSkipTheReason() throws {
        struct OlderHaulError: Decodable, Equatable {
            var category: FailureCategory
            var message: String
            var httpStatus: Int?
        }
        let plain = try #require(String(data: JSONEncoder().encode(HaulError(.network, "reset")), encoding: .utf8))
        #expect(!plain.contains("reason"))
        let typed = try JSONEncoder().encode(HaulError(.fileIO, "cannot write /d/a: No space left on device",
                                                       reason: .diskFull))
        #expect(String(decoding: typed, as: UTF8.self).contains(#""reason":"disk-full""#))
        #expect(try JSONDecoder().decode(OlderHaulError.self, from: typed)
                == OlderHaulError(category: .fileIO, message: "cannot write /d/a: No space left on device"))
    }
}
