import Foundation
import HaulCore
import SampleServer
import TestSupport
import Testing

/// The queue's order through the real binaries: `haul move` against the service, and the full-screen
/// interface's `K`/`T` and `/` in tmux, attached to the same service.
@Suite(.serialized) struct QueueOrderEndToEndTests {
    static func haul(_ arguments: [String], _ home: ServiceHome, in dir: TempDirectory) async throws -> HaulProcess.Exit {
        try await HaulProcess.run(arguments, in: dir.path, environment: home.environment)
    }

    /// The names of the list's rows, top to bottom (after the header and the headings).
    static func names(_ screen: [String]) -> [String] {
        screen.dropFirst(2).prefix { !$0.trimmingCharacters(in: .whitespaces).isEmpty }.compactMap { line in
            line.dropFirst().split(separator: " ").first.map(String.init)
        }
    }

    @Test func moveKeysAndTheFilterInTheScreenAndHaulMove() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        // medium.bin (20 MiB) takes 80 s at this rate: it runs, and the other two wait, all through the test.
        try await withSampleServer(rate: 256 << 10) { server in
            let add = try await Self.haul(["add", "-j", "1", "-o", "out", server.downloadURL("medium.bin"),
                                           server.downloadURL("small.bin"), server.downloadURL("large.bin")], home, in: dir)
            #expect(add.status == 0, "\(add.stderr)")
            #expect(add.stdoutLines == ["1 medium.bin", "2 small.bin", "3 large.bin"])

            let moved = try await Self.haul(["move", "3", "top"], home, in: dir)
            #expect(moved.status == 0, "\(moved.stderr)")
            #expect(moved.stdoutLines == ["3 is number 1 in the queue"])
            let refused = try await Self.haul(["move", "9", "up"], home, in: dir)
            #expect(refused.status == 2 && refused.stderr == "haul: move: no download with id 9\n")
            let badPlace = try await Self.haul(["move", "2", "first"], home, in: dir)
            #expect(badPlace.status == 2 && badPlace.stderr.contains("'first' is not a place in the queue"))

            let tmux = try TmuxSession([], in: dir.path, home: home)
            // The waiting rows in the queue's order, in their places: large before small.
            try await tmux.waitFor("the queue") { Self.names($0) == ["medium.bin", "large.bin", "small.bin"] }
            // small.bin up, with K: the service moves it, and the screen shows the move.
            try tmux.send("Down", "Down", "K")
            try await tmux.waitFor("small.bin moved up") { Self.names($0) == ["medium.bin", "small.bin", "large.bin"] }
            // large.bin (the selection went with small.bin: one down) to the top, with T.
            try tmux.send("Down", "T")
            try await tmux.waitFor("large.bin moved to the top") {
                Self.names($0) == ["medium.bin", "large.bin", "small.bin"]
            }
            // The running one does not move.
            try tmux.send("Home", "K")
            try await tmux.waitFor("the refusal") { $0.last?.contains("Only a queued or paused download moves") == true }

            // `/` filters as it is typed; Esc clears it.
            try tmux.send("/", "m")
            let filtered = try await tmux.waitFor("the filter") { Self.names($0) == ["medium.bin", "small.bin"] }
            #expect(filtered.first?.contains("/m (2 of 3)") == true, "\(filtered.first ?? "")")
            try tmux.send("a")
            try await tmux.waitFor("a narrower filter") { Self.names($0) == ["small.bin"] }
            try tmux.send("Escape")
            try await tmux.waitFor("the filter cleared") { Self.names($0) == ["medium.bin", "large.bin", "small.bin"] }

            // The service holds the order the screen made: small.bin is second, so one up puts it first.
            let json = try await Self.haul(["move", "2", "up", "--json"], home, in: dir)
            #expect(json.stdoutLines == [#"{"id":2,"position":0}"#])
            try await tmux.waitFor("small.bin first") { Self.names($0) == ["medium.bin", "small.bin", "large.bin"] }

            try tmux.send("q")
            try await tmux.waitFor("the detach question") { $0.contains { $0.contains("Keep them going in the background?") } }
            try tmux.send("Enter")
            _ = try await tmux.waitForExit()
        }
    }
}
