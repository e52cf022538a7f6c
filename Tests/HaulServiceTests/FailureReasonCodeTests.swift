import Foundation
import GRDB
@testable import HaulCore
import Testing
import TestSupport
@testable import HaulService
@testable import HaulServiceClient

/// What reads a failure's typed reason: the aria2 face's `errorCode` and the exit code; and the reason
/// kept by the store and carried over the socket.
@Suite struct FailureReasonCodeTests {
    typealias F = StoreFixtures

    /// Each reason with the category its errors are made with, and the aria2 code and the exit code that
    /// failure gets (the codes aria2's `errorCode` gave for the same failures when it read them from words).
    static let table: [(FailureReason, FailureCategory, aria2: Int, exit: Int32)] = [
        (.httpStatus(404), .server, 3, 8),
        (.httpStatus(410), .server, 3, 8),
        (.httpStatus(503), .server, 29, 8),
        (.httpStatus(500), .server, 22, 8),
        (.httpStatus(403), .server, 22, 8),
        (.httpStatus(401), .authentication, 24, 6),
        (.httpStatus(407), .authentication, 24, 6),
        (.httpStatus(416), .protocol, 22, 7),
        (.timedOut, .network, 2, 4),
        (.stalled, .network, 2, 4),
        (.connectionRefused, .network, 6, 4),
        (.hostNotFound, .network, 6, 4),
        (.connectionFailed, .network, 6, 4),
        (.connectionLost, .network, 6, 4),
        (.tls, .tls, 1, 5),
        (.diskFull, .fileIO, 9, 3),
        (.permissionDenied, .fileIO, 17, 3),
        (.readOnlyFileSystem, .fileIO, 17, 3),
        (.checksumMismatch, .checksum, 32, 9),
        (.otherFile, .server, 22, 8),
        (.noRoom(needed: 1), .fileIO, 9, 3),
        (.remoteFileNotFound, .server, 3, 8),
        (.remoteAccessDenied, .server, 22, 8),
        (.loginRefused, .authentication, 24, 6),
        (.ftpCommandFailed, .protocol, 21, 7),
        (.hostKeyUnknown, .tls, 1, 5),
        (.hostKeyChanged, .tls, 1, 5),
        (.hostKeyMismatch, .tls, 1, 5),
    ]

    @Test func everyReasonHasItsAria2CodeAndExitCode() {
        for (reason, category, aria2, exit) in Self.table {
            let error = HaulError(category, "words that say nothing to a reader", reason: reason)
            #expect(Aria2Status.errorCode(error) == aria2, "\(reason)")
            #expect(error.category.exitCode == exit, "\(reason)")
        }
        // Every kind of reason is in the table.
        let kinds = Set(Self.table.map { $0.0.rawValue.hasPrefix("http-") ? "http" : $0.0.rawValue })
        #expect(kinds.count == FailureReason.examples.count)
    }

    /// Without a reason (an older haul's record, or a failure nothing finer is known of) the category alone
    /// gives the code, whatever the words say.
    @Test func withoutAReasonTheCategoryDecides() {
        let cases: [(FailureCategory, Int)] = [
            (.network, 6), (.server, 22), (.protocol, 22), (.authentication, 24), (.checksum, 32), (.fileIO, 17),
            (.usage, 28), (.cancelled, 31), (.interrupted, 31), (.terminated, 31), (.hangUp, 31), (.tls, 1), (.other, 1),
        ]
        for (category, code) in cases {
            #expect(Aria2Status.errorCode(HaulError(category, "server answered 404 Not Found: timed out, no space")) == code,
                    "\(category)")
        }
    }

    /// The errors as their sources make them get the codes the words used to give.
    @Test func errorsAsMadeGetTheirCodes() {
        #expect(Aria2Status.errorCode(HaulError.stalled(seconds: "30")) == 2)
        #expect(Aria2Status.errorCode(PartFile.error("cannot write", "/d/a.part", ENOSPC)) == 9)
        #expect(Aria2Status.errorCode(PartFile.error("cannot write", "/d/a.part", EIO)) == 17)
        #expect(Aria2Status.errorCode(HaulError(.server, "server answered 404 Not Found", httpStatus: 404)) == 3)
        #expect(Aria2Status.errorCode(HaulError(.server, "server answered 503 Service Unavailable", httpStatus: 503)) == 29)
    }

    // MARK: the store

    @Test func theStoreKeepsTheReason() throws {
        let directory = TempDirectory()
        var store = try Store(directory: directory.path)
        let failures = [
            HaulError(.server, "server answered 404 Not Found", httpStatus: 404),
            HaulError(.fileIO, "cannot write /tmp/out/a.part: No space left on device", reason: .diskFull),
            HaulError(.network, "no data received for 30 s (stalled)", reason: .stalled),
            HaulError(.network, "connection closed after 5 of 10 bytes"),
        ]
        var ids: [DownloadID] = []
        for (index, failure) in failures.enumerated() {
            let id = try store.insert(F.job("\(index)"), file: "\(index)", added: F.time(0))
            try store.apply([.state(id: id, .connecting), .state(id: id, .failed(failure))], at: F.time(1))
            ids.append(id)
        }
        try store.close()
        store = try Store(directory: directory.path)
        let rows = try store.all()
        #expect(rows.map(\.state.failure?.reason) == [.httpStatus(404), .diskFull, .stalled, nil])
        #expect(rows.map(\.state.failure?.message) == failures.map(\.message))
        #expect(rows.compactMap(\.state.failure).map(Aria2Status.errorCode) == [3, 9, 2, 6])
        // A retry clears it with the rest of the failure.
        try store.apply([.state(id: ids[0], .queued)], at: F.time(2))
        let column = try store.pool.read { db in
            try String?.fetchOne(db, sql: "SELECT errorReason FROM download WHERE id = ?", arguments: [ids[0]])
        }
        #expect(column == .some(nil))
        try store.close()
    }

    /// A failure stored before the reason was (schema v3): its reason is unknown, its category decides.
    @Test func aFailureStoredByAnOlderHaulHasNoReason() throws {
        let directory = TempDirectory()
        let path = directory.path + "/haul.sqlite"
        let old = try DatabaseQueue(path: path)
        try StoreSchema.migrator.migrate(old, upTo: "v3")
        try old.write { db in
            try db.execute(sql: """
                INSERT INTO download (url, job, secretsWithheld, state, errorCategory, errorMessage, file, added, gid)
                VALUES ('https://example.com/a', '{"url":"https://example.com/a","outputDirectory":"/tmp"}', 0,
                        'failed', 'server', 'server answered 404 Not Found', 'a', 1, '00000000000000aa')
                """)
        }
        try old.close()
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)

        let store = try Store(directory: directory.path)
        let rows = try store.all()
        let failure = try #require(rows.first?.state.failure)
        #expect(failure == HaulError(.server, "server answered 404 Not Found"))
        #expect(failure.reason == nil)
        #expect(Aria2Status.errorCode(failure) == 22)
        try store.close()
    }

    // MARK: the socket

    @Test func theSocketCarriesTheReason() throws {
        let failures = [
            HaulError(.server, "server answered 410 Gone", httpStatus: 410),
            HaulError(.fileIO, "cannot write /d/a.part: Permission denied", reason: .permissionDenied),
            HaulError(.checksum, "checksum mismatch: sha256 is 00, expected 11", reason: .checksumMismatch),
        ]
        for failure in failures {
            let event = ManagerEvent.state(id: 3, .failed(failure))
            let back = try Wire.decode(ManagerEvent.self, from: Data(event.json(with: Wire.encoder())))
            #expect(back == event)
            guard case .state(_, .failed(let error)) = back else { continue }
            #expect(error.reason == failure.reason)
        }
        let retry = ManagerEvent.fact(id: 3, .retrying(attempt: 1, of: 3, delaySeconds: 1, resumeAt: 0,
                                                       reason: HaulError(.network, "x", reason: .timedOut)))
        #expect(try Wire.decode(ManagerEvent.self, from: Data(retry.json(with: Wire.encoder()))) == retry)
    }

    /// An event an older service sent has no `reason`: it decodes, the reason unknown.
    @Test func anOlderServicesEventDecodes() throws {
        let json = #"{"error":{"category":"file-io","message":"cannot write /d/a.part: No space left on device"},"#
            + #""event":"state","id":4,"state":"failed"}"#
        let event = try Wire.decode(ManagerEvent.self, from: Data(json.utf8))
        #expect(event == .state(id: 4, .failed(HaulError(.fileIO, "cannot write /d/a.part: No space left on device"))))
        guard case .state(_, .failed(let error)) = event else { return }
        #expect(error.reason == nil)
    }
}

private extension DownloadState {
    var failure: HaulError? {
        if case .failed(let error) = self { return error }
        return nil
    }
}
