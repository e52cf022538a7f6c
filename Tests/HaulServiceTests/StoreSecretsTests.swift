import Foundation
import HaulCore
import Testing
import TestSupport
@testable import HaulService

/// Passwords and credential headers never reach the disk.
@Suite struct StoreSecretsTests {
    typealias F = StoreFixtures

    static let password = "hunter2-pw-5f8a"
    static let token = "Bearer tok-77c1e0"
    static let cookie = "session=ck-3b9d2"
    static let proxy = "Basic cHJveHktc2VjcmV0"

    static func jobWithSecrets() -> DownloadJob {
        var job = DownloadJob(url: "https://alice:\(password)@example.com/private/report.pdf", outputDirectory: "/tmp/out")
        job.headers = ["Authorization: \(token)", "cookie:\(cookie)", "  PROXY-Authorization : \(proxy)",
                       "Accept: application/pdf", "X-Cookie-Note: kept"]
        return job
    }

    @Test func secretsAreWithheldFromTheRow() throws {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        let id = try store.insert(Self.jobWithSecrets(), file: "report.pdf", added: F.time(0))

        let row = try #require(try store.find(id))
        #expect(row.secretsWithheld)
        #expect(row.url == "https://alice:***@example.com/private/report.pdf")
        let job = try row.job
        #expect(job.url == row.url)
        #expect(job.headers == ["Accept: application/pdf", "X-Cookie-Note: kept"])
    }

    @Test func noSecretIsInAnyFileOfTheStore() throws {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        let id = try store.insert(Self.jobWithSecrets(), file: "report.pdf", added: F.time(0))
        try store.apply([.state(id: id, .connecting)], at: F.time(1))
        let secrets = [Self.password, Self.token, Self.cookie, Self.proxy]

        // While open (rows in the WAL) and after closing (rows in the database file).
        let whileOpen = F.bytesOfEveryFile(in: directory)
        #expect(whileOpen.containsText("report.pdf"))
        for secret in secrets { #expect(!whileOpen.containsText(secret), "\(secret) is on disk") }
        try store.close()
        let closed = F.bytesOfEveryFile(in: directory)
        #expect(closed.containsText("report.pdf"))
        for secret in secrets { #expect(!closed.containsText(secret), "\(secret) is on disk") }
    }

    @Test func headerNamesAreMatchedWhole() {
        #expect(WithheldJob.isSecret(header: "authorization: x"))
        #expect(WithheldJob.isSecret(header: "Cookie"))
        #expect(!WithheldJob.isSecret(header: "Set-Cookie: x"))
        #expect(!WithheldJob.isSecret(header: "X-Authorization-Hint: x"))
    }
}
