import Foundation
import Testing
import TestSupport

/// `+`/`-` on the full screen change the service's overall cap while it runs; the header shows it, and a
/// screen attached later starts with it.
@Suite struct LiveLimitTests {
    @Test func minusCapsTheServiceAndAnotherScreenShowsIt() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        let first = try TmuxSession([], in: dir.path, home: home)
        try await first.waitFor("the screen") { $0.contains { $0.contains("Downloads") } }
        try first.send("-")
        try await first.waitFor("the cap in the header") { $0.first?.contains("≤ 8.00 MiB/s") == true }
        let status = try await HaulProcess.run(["service", "status", "--json"], in: dir.path, environment: home.environment)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(object["limit"] as? Int == 8 << 20, "\(status.stdout)")

        let second = try TmuxSession(["attach"], in: dir.path, home: home)
        try await second.waitFor("the cap, in another screen") { $0.first?.contains("≤ 8.00 MiB/s") == true }
        try second.send("+", "+", "+", "+", "+", "+", "+", "+")
        try await second.waitFor("no cap") { $0.first?.contains("≤") == false && $0.first?.contains("done") == true }
        let lifted = try await HaulProcess.run(["service", "status", "--json"], in: dir.path, environment: home.environment)
        #expect(!lifted.stdout.contains("\"limit\""), "\(lifted.stdout)")
        try first.send("q")
        try second.send("q")
        _ = try await first.waitForExit()
        _ = try await second.waitForExit()
    }
}
