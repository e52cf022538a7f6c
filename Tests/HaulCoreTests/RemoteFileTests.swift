import CCurl
import Foundation
@testable import HaulCore
import Testing
import TestSupport

/// FTP, SFTP and SCP in the engine: the head haul makes of what libcurl learnt (`ResponseHead.remoteFile`),
/// how the download's rules read it, libcurl's codes for these protocols, and redirects that stay on HTTP.
/// (Downloads from real servers: `FTPTests`, `SFTPTests`.)
@Suite struct RemoteFileTests {
    typealias Facts = ResponseHead.RemoteFileFacts
    static let modified: Int64 = 1_700_000_000

    static func facts(first: Int64? = nil, last: Int64? = nil, length: Int64?, seeks: Bool = true,
                      bodyless: Bool = false, pastEnd: Bool = false) -> Facts {
        Facts(seeks: seeks, rangeFirst: first, rangeLast: last, length: length, modified: modified, bodyless: bodyless,
              pastEnd: pastEnd)
    }

    @Test func theWholeFileIsA200WithItsSizeAndTimeAsItsVersion() throws {
        let head = ResponseHead.remoteFile(Self.facts(length: 5000), url: "ftp://h/f")
        #expect(head.status == 200)
        #expect(head.contentLength == 5000)
        #expect(head[.eTag] == "\"5000-1700000000\"")
        #expect(head[.lastModified] == "Tue, 14 Nov 2023 22:13:20 GMT")
        #expect(head[.acceptRanges] == "bytes")
        #expect(try ResponseCheck.placement(of: head, asked: nil, knownTotal: nil) == .whole(total: 5000))
    }

    /// libcurl is asked for the rest of the file from the range's first byte, and says how much that is: the
    /// size is the first byte plus that, and a bounded range ends where it was asked to.
    @Test func aRangeIsA206ForExactlyTheBytesAsked() throws {
        let open = ResponseHead.remoteFile(Self.facts(first: 1000, length: 4000), url: "sftp://h/f")
        #expect(open.status == 206)
        #expect(open[.contentRange] == "bytes 1000-4999/5000")
        #expect(try ResponseCheck.placement(of: open, asked: (1000, nil), knownTotal: 5000)
                == .range(first: 1000, last: 4999, total: 5000))
        let bounded = ResponseHead.remoteFile(Self.facts(first: 1000, last: 1999, length: 4000), url: "sftp://h/f")
        #expect(try ResponseCheck.placement(of: bounded, asked: (1000, 1999), knownTotal: nil)
                == .range(first: 1000, last: 1999, total: 5000))
        #expect(bounded[.eTag] == "\"5000-1700000000\"")
        // A probe's range past a small file's end: the file, to its end.
        let short = ResponseHead.remoteFile(Self.facts(first: 0, last: 1_048_575, length: 300), url: "ftp://h/f")
        #expect(try ResponseCheck.placement(of: short, asked: (0, 1_048_575), knownTotal: nil)
                == .range(first: 0, last: 299, total: 300))
    }

    /// Another size on the server is another version of the file, not a server contradicting itself: its ETag
    /// differs from the part's, so the download starts over (where an HTTP 206 claiming the old version with a
    /// new size is a protocol error).
    @Test func aNewSizeIsAnotherVersionNotAContradiction() throws {
        let grown = ResponseHead.remoteFile(Self.facts(first: 1000, length: 9000), url: "ftp://h/f")
        #expect(try ResponseCheck.placement(of: grown, asked: (1000, nil), knownTotal: 5000)
                == .range(first: 1000, last: 9999, total: 10000))
        #expect(ResponseCheck.otherVersion(of: grown, etag: "\"5000-1700000000\"", lastModified: nil) != nil)
        let same = ResponseHead.remoteFile(Self.facts(first: 1000, length: 4000), url: "ftp://h/f")
        #expect(ResponseCheck.otherVersion(of: same, etag: "\"5000-1700000000\"", lastModified: nil) == nil)
    }

    /// Nothing to send from an offset at the file's end, or an offset past it: HTTP's 416, with the size when
    /// it is known (a part that is already whole then finishes).
    @Test func anOffsetAtOrPastTheEndIsA416() {
        let atEnd = ResponseHead.remoteFile(Self.facts(first: 5000, length: nil, bodyless: true), url: "ftp://h/f")
        #expect(atEnd.status == 416)
        #expect(atEnd.unsatisfiedRangeTotal == 5000)
        #expect(atEnd[.eTag] == "\"5000-1700000000\"")
        let past = ResponseHead.remoteFile(Self.facts(first: 6000, length: nil, pastEnd: true), url: "ftp://h/f")
        #expect(past.status == 416)
        #expect(past.unsatisfiedRangeTotal == nil)
    }

    /// SCP cannot seek: the whole file whatever was asked, with nothing to resume it by.
    @Test func scpIsTheWholeFileWithoutRangesOrVersion() throws {
        let head = ResponseHead.remoteFile(Self.facts(first: 1000, length: 5000, seeks: false), url: "scp://h/f")
        #expect(head.status == 200)
        #expect(head[.acceptRanges] == nil && head[.eTag] == nil && head[.lastModified] == nil)
        #expect(try ResponseCheck.placement(of: head, asked: (1000, nil), knownTotal: 5000) == .whole(total: 5000))
    }

    @Test func theProtocolsCodesMapAsHTTPsStatuses() {
        #expect(HaulError(curlCode: CURLE_REMOTE_FILE_NOT_FOUND, detail: "").category == .server)
        #expect(HaulError(curlCode: CURLE_REMOTE_ACCESS_DENIED, detail: "").category == .server)
        #expect(HaulError(curlCode: CURLE_LOGIN_DENIED, detail: "").category == .authentication)
        #expect(HaulError(curlCode: CURLE_FTP_WEIRD_PASV_REPLY, detail: "").category == .protocol)
        #expect(HaulError(curlCode: CURLE_BAD_DOWNLOAD_RESUME, detail: "").category == .protocol)
        #expect(HaulError(curlCode: CURLE_SSH, detail: "").category == .protocol)
        #expect(!RetryPolicy().isTransient(HaulError(curlCode: CURLE_REMOTE_FILE_NOT_FOUND, detail: "")))
    }

    @Test func anSSHHostKeyIsGivenAsSSHKeygenPrintsIt() {
        #expect(SSHFingerprint.problem(with: "SHA256:3q6YBlyzSyiequN+SzrMGkbqOoyJhmpwOaUXWPPZULw") == nil)
        #expect(SSHFingerprint.problem(with: "SHA256:3q6YBlyzSyiequN+SzrMGkbqOoyJhmpwOaUXWPPZULw=") == nil)
        for bad in ["3q6YBlyzSyiequN+SzrMGkbqOoyJhmpwOaUXWPPZULw", "SHA256:abc", "MD5:aa:bb", "SHA256:" + String(repeating: "!", count: 43)] {
            #expect(SSHFingerprint.problem(with: bad) != nil, "\(bad)")
        }
        #expect(SSHFiles.bareFingerprint("SHA256:abc=") == "abc")
        #expect(SSHFiles.hasUser("sftp://ann@h/x") && SSHFiles.hasUser("sftp://ann:pw@h:22/x"))
        #expect(!SSHFiles.hasUser("sftp://h/a@b") && !SSHFiles.hasUser("scp://h"))
        #expect(SSHFiles.hostName(in: "sftp://ann:pw@example.org:2222/x") == "example.org:2222")
    }

    /// A web server's redirect never takes haul to an FTP or SSH server: refused by libcurl before any
    /// connection (the target's port has nothing listening, which would be a network error), a protocol error.
    @Test(arguments: ["ftp", "ftps", "sftp", "scp"])
    func aRedirectFromHTTPToAnotherProtocolIsRefused(scheme: String) async throws {
        let dir = TempDirectory()
        let server = try ScriptedAnswerServer(
            "HTTP/1.1 302 Found\r\nLocation: \(scheme)://127.0.0.1:1/data.bin\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            body: [])
        defer { server.stop() }
        var job = DownloadJob(url: server.url, outputDirectory: dir.path)
        job.retries = 2
        let (result, facts) = await runQuickly(job)
        let error = try #require(result.failure)
        #expect(error.category == .protocol, "\(error)")
        #expect(facts.isEmpty, "\(facts)")
        #expect(dir.listing().filter { !$0.hasSuffix(".part") }.isEmpty, "\(dir.listing())")
    }
}
