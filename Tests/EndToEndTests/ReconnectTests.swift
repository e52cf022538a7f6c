import Foundation
import HaulCore
import SampleServer
import TestSupport
import Testing

/// Two screens attached to one service (tmux) while the service goes away: `haul service stop`, or a kill -9.
/// Both say so in their header; then they connect again, which starts the service as any client does, and
/// show the download as the service holds it (running again, not paused); `q` gives the terminal back.
/// large.bin at `TUITests.slowRate` takes 400 s: it still runs when the test looks at it again, however slow
/// the machine.
@Suite(.serialized) struct ReconnectTests {
    static let stoppedLine = "service stopped; reconnecting"

    /// Both screens: the download's row running, the header the usual one (the clock, not the service's line).
    static func running(_ screen: [String]) -> Bool {
        TUITests.row(screen, "large.bin")?.contains("downloading") == true
            && screen.first.map { $0.contains("elapsed") && !$0.contains("service") } == true
    }

    static func says(_ line: String) -> @Sendable ([String]) -> Bool {
        { screen in screen.first?.contains(line) == true }
    }

    /// Keeps the service from starting until `allowStarts`: its log is a link, which a client refuses to start
    /// the service with ("move it away"). The screens' attempts to connect again fail meanwhile, so that what
    /// they show while the service is away stays on the screen for the test to read, however slow the machine.
    static func blockStarts(_ home: ServiceHome) throws {
        let log = home.path + "/service.log"
        try? FileManager.default.moveItem(atPath: log, toPath: log + ".before")
        try FileManager.default.createSymbolicLink(atPath: log, withDestinationPath: "/dev/null")
    }

    static func allowStarts(_ home: ServiceHome) throws {
        try FileManager.default.removeItem(atPath: home.path + "/service.log")
    }

    static func service(_ home: ServiceHome, in directory: String) async throws -> (running: Bool, pid: Int32?, states: [String]) {
        let status = try await HaulProcess.run(["service", "status", "--json"], in: directory, environment: home.environment)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any],
                                  "\(status.stdout) \(status.stderr)")
        let listed = try await HaulProcess.run(["ls", "--json"], in: directory, environment: home.environment)
        let downloads = try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]] ?? []
        return (object["running"] as? Bool ?? false, (object["pid"] as? NSNumber)?.int32Value,
                downloads.compactMap { $0["state"] as? String })
    }

    @Test(arguments: [false, true])
    func twoScreensSayTheServiceStoppedAndShowTheTrueStateOnceBack(killed: Bool) async throws {
        let dir = TempDirectory()
        let home = ServiceHome()
        try await withSampleServer(rate: TUITests.slowRate) { server in
            // One screen adds the download, the other attaches to the same service.
            let first = try TmuxSession(["-o", "out", "--timeout", "300", server.downloadURL("large.bin")], in: dir.path,
                                        home: home)
            try await first.waitFor("the download on the first screen", Self.running)
            let second = try TmuxSession(["attach"], in: dir.path, home: home)
            try await second.waitFor("the download on the second screen", Self.running)
            let before = try await Self.service(home, in: dir.path)
            #expect(before.running && before.states == ["downloading"], "\(before)")

            try Self.blockStarts(home)
            if killed {
                kill(try #require(before.pid), SIGKILL)
            } else {
                let stop = try await HaulProcess.run(["service", "stop"], in: dir.path, environment: home.environment)
                #expect(stop.status == 0, "\(stop.stderr)")
            }
            // Both say it, each in its header (the old screens said nothing and froze).
            try await first.waitFor("the first screen to say the service stopped", Self.says(Self.stoppedLine))
            try await second.waitFor("the second screen to say the service stopped", Self.says(Self.stoppedLine))

            // Each attempt to connect again fails (the service cannot start yet), and says why.
            // (The first says "1 attempt failed"; on a loaded machine a screen may be read only by its second.)
            for screen in [first, second] {
                try await screen.waitFor("a failed attempt said") { screen in
                    screen.first.map { $0.contains("attempt failed: ") || $0.contains("attempts failed: ") } == true
                }
            }
            // A key for the service says it was not sent; the row stays as it was.
            try first.send("p")
            try await first.waitFor("the key refused") { $0.last?.contains("Not sent: the service stopped") == true }
            #expect(TUITests.row(try first.screen(), "large.bin")?.contains("pausing") == false)

            // They connect again on their own, starting the service, and show the download running as it is.
            try Self.allowStarts(home)
            try await first.waitFor("the first screen back, the download running", within: .seconds(30), Self.running)
            try await second.waitFor("the second screen back, the download running", within: .seconds(30), Self.running)
            let after = try await Self.service(home, in: dir.path)
            #expect(after.running && after.pid != before.pid, "a new service: \(after), before \(before)")
            #expect(after.states == ["downloading"], "\(after)")
            // The bar moves again: progress reaches the screens after the reconnection.
            let shown = TUITests.percent(TUITests.row(try first.screen(), "large.bin")) ?? 0
            try await first.waitFor("the bar to move", within: .seconds(30)) {
                (TUITests.percent(TUITests.row($0, "large.bin")) ?? 0) > shown
            }

            // q restores the terminal on both (the download keeps going in the background).
            for screen in [first, second] {
                try screen.send("q")
                try await screen.waitFor("the detach question") { $0.contains { $0.contains("Keep it going in the background?") } }
                try screen.send("Enter")
                try await TUITests.expectExit(screen, 0)
            }
        }
    }

    /// `q` while the service is away quits at once, asking nothing, and gives the terminal back.
    @Test func qQuitsWhileTheServiceIsAway() async throws {
        let dir = TempDirectory()
        let home = ServiceHome()
        try await withSampleServer(rate: TUITests.slowRate) { server in
            let screen = try TmuxSession(["-o", "out", "--timeout", "300", server.downloadURL("large.bin")], in: dir.path,
                                         home: home)
            try await screen.waitFor("the download", Self.running)
            try Self.blockStarts(home)
            let stop = try await HaulProcess.run(["service", "stop"], in: dir.path, environment: home.environment)
            #expect(stop.status == 0, "\(stop.stderr)")
            try await screen.waitFor("the screen to say the service stopped", Self.says(Self.stoppedLine))
            try screen.send("q")
            try await TUITests.expectExit(screen, 0)
        }
    }
}
