import TestSupport
import Testing
@testable import HaulCore

/// The curl thread keeps the easy handles of ended transfers for the next ones (reset to curl's defaults):
/// nothing one transfer asked for may reach the server in the next one's request.
@Suite struct ReusedHandleTests {
    @Test func aTransferOnAKeptHandleSendsNothingOfTheOneBefore() async throws {
        let server = try HeldHeadServer(size: 5)
        defer { server.stop() }
        let events = TransferEvents()
        let driver = events.driver()

        var first = HTTPRequest(url: server.url)
        first.headers = ["X-Secret: 1"]
        first.range = (first: 1, last: 3)
        first.ifRange = "\"v1\""
        first.options.user = "ann"
        first.options.password = "s3cret"
        first.options.userAgent = "first-agent"
        for request in [first, HTTPRequest(url: server.url)] {
            let transfer = driver.start(request)
            #expect(try await [200, 206].contains(transfer.head().status))
            for try await _ in transfer.bytes {}
            await events.waitUntilClosed(transfer)
        }
        await driver.shutdown()

        let heads = server.requests
        try #require(heads.count == 2, "\(heads)")
        let before = heads[0].lowercased()
        #expect(before.contains("x-secret: 1") && before.contains("authorization: basic") && before.contains("range: bytes=1-3")
                && before.contains("if-range") && before.contains("first-agent"), "\(heads[0])")
        let after = heads[1].lowercased()
        for leftover in ["x-secret", "authorization", "range:", "if-range", "first-agent"] {
            #expect(!after.contains(leftover), "\(leftover) in \(heads[1])")
        }
        #expect(after.contains("user-agent: haul/"), "\(heads[1])")
    }
}
