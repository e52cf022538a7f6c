import HaulCore
import NIOConcurrencyHelpers
import Testing
import TestSupport
@testable import HaulTUI

/// An attached screen whose service goes away (`haul service stop`, a crash) says so in its header, keeps
/// trying to connect again with growing waits on the loop's clock, refuses keys for the service in a line,
/// and once back shows what the service's new snapshot holds.
@Suite struct ReconnectTests {
    let size = Size(columns: 120, rows: 12)

    /// Two downloads as a screen attached to a service shows them: one running, one done.
    func attached() -> AppState {
        var state = Fixtures.state(size, rows: [
            Fixtures.row(1, "medium.bin", .downloading, completed: 5 << 20, speed: 1_048_576),
            Fixtures.row(2, "small.bin", .done, completed: 1 << 20, total: 1 << 20),
        ])
        state.attached = true
        state.clockRunning = true
        state.elapsedSeconds = 12
        return state
    }

    func header(_ state: AppState) -> String {
        render(state, size: state.size).lines[0]
    }

    func footer(_ state: AppState) -> String {
        render(state, size: state.size).lines.last ?? ""
    }

    // MARK: update and render

    @Test func theEndOfTheStreamIsSaidInTheHeaderAndAReconnectIsScheduled() {
        var state = attached()
        let effects = update(&state, .service(.lost(after: .seconds(60))))
        #expect(effects == [.reconnect(after: .seconds(1)), .stopClock], "the first wait, and the clock stops")
        #expect(state.connection == .lost(attempts: 0, problem: nil))
        #expect(!state.clockRunning)
        #expect(state.rows[0].bytesPerSecond == 0, "nothing is known to arrive")
        #expect(header(state).hasPrefix(" haul │ Downloads   "))
        #expect(header(state).hasSuffix(" service stopped; reconnecting…"))
        // The rows stay as they were last heard of.
        let lines = render(state, size: state.size).lines
        #expect(lines.contains { $0.contains("medium.bin") && $0.contains("downloading") }, "\(lines)")
    }

    @Test func failedAttemptsWaitLongerEachTimeUpToHalfAMinute() {
        var state = attached()
        var waits = update(&state, .service(.lost(after: .seconds(60)))).compactMap(\.reconnectDelay)
        for attempt in 1...8 {
            waits += update(&state, .service(.failed("cannot reach the service at /s/haul.sock: no answer")))
                .compactMap(\.reconnectDelay)
            #expect(state.connection == .lost(attempts: attempt, problem: "cannot reach the service at /s/haul.sock: no answer"))
        }
        #expect(waits == [1, 2, 4, 8, 16, 30, 30, 30, 30].map { Duration.seconds($0) })
        #expect(header(state).contains("service stopped; reconnecting… (8 attempts failed: cannot reach the service"))
    }

    /// A service that stops again at once after each start is not started again at once: the waits go on
    /// growing across connections that did not last, and start over after one that did.
    @Test func aConnectionThatEndsAtOnceDoesNotResetTheWaits() {
        var state = attached()
        var waits: [Duration] = []
        for _ in 0..<3 {
            waits += update(&state, .service(.lost(after: .milliseconds(200)))).compactMap(\.reconnectDelay)
            _ = update(&state, .service(.connected))
            _ = update(&state, .service(.live))
        }
        waits += update(&state, .service(.lost(after: ReconnectBackoff.resetAfter))).compactMap(\.reconnectDelay)
        #expect(waits == [1, 2, 4, 1].map { Duration.seconds($0) })
    }

    @Test func keysForTheServiceSayTheyWereNotSentAndChangeNothing() {
        var state = attached()
        _ = update(&state, .service(.lost(after: .seconds(60))))
        let before = state
        for key: Key in [.character("p"), .character("c"), .character("C"), .character("P"), .character("-")] {
            #expect(update(&state, .key(key)) == [], "\(key)")
            #expect(state.message == AppState.notSent, "\(key)")
            var expected = before
            expected.message = AppState.notSent
            #expect(state == expected, "\(key) changed nothing but the line")
        }
        #expect(footer(state) == " Not sent: the service stopped (reconnecting; q quits)")
        // r on the finished row; a URL typed after a.
        _ = update(&state, .key(.down))
        _ = update(&state, .key(.character("r")))
        #expect(state.message == "Only a failed or cancelled download can be retried", "what does not need the service")
        _ = update(&state, .key(.character("a")))
        for character in "http://x/y" { _ = update(&state, .key(.character(character))) }
        #expect(update(&state, .key(.enter)) == [])
        #expect(state.message == AppState.notSent)
        #expect(state.overlay == .prompt("http://x/y"), "the URL stays typed, to send once the service is back")
        // What only this screen does still works.
        _ = update(&state, .key(.escape))
        _ = update(&state, .key(.character("?")))
        #expect(state.overlay == .help)
    }

    @Test func qQuitsAtOnceWhileTheServiceIsAway() {
        var state = attached()
        _ = update(&state, .key(.character("q")))
        #expect(state.overlay == .confirmDetach, "asked while connected")
        _ = update(&state, .service(.lost(after: .seconds(60))))
        #expect(state.overlay == nil, "nothing to decide with the service away")
        #expect(update(&state, .key(.character("q"))) == [.quit(pausing: false)])
        #expect(state.quitting)
        #expect(update(&state, .service(.failed("no answer"))) == [], "no further attempt once quitting")
    }

    @Test func theNewSnapshotReplacesTheRowsOnceWhole() {
        var state = attached()
        state.selection = 1
        _ = update(&state, .service(.lost(after: .seconds(60))))
        // The service paused medium.bin as it stopped; the screen heard that before the end.
        state.rows[0].state = .paused
        #expect(update(&state, .service(.connected)) == [.loadLimit])
        #expect(state.connection == .resyncing)
        #expect(header(state).contains("service back; loading the queue…"))
        let snapshot: [ManagerEvent] = [
            .added(id: 1, url: "http://h/medium.bin", file: "medium.bin"),
            .started(id: 1, file: "medium.bin", path: "/d/medium.bin", total: 20 << 20),
            .progress(id: 1, DownloadProgress(completed: 6 << 20, batchBytes: 0, total: 20 << 20, bytesPerSecond: 2_097_152)),
            .state(id: 1, .downloading),
            .added(id: 3, url: "http://h/large.bin", file: "large.bin"),
        ]
        for event in snapshot { _ = update(&state, .manager(event)) }
        // Gathered aside: the old rows stay on the screen until the snapshot is whole.
        #expect(state.rows.map(\.name) == ["medium.bin", "small.bin"])
        #expect(state.rows[0].state == .paused)
        let effects = update(&state, .service(.live))
        #expect(effects == [.startClock])
        #expect(state.connection == .connected)
        #expect(state.resync == nil)
        #expect(state.rows.map(\.name) == ["medium.bin", "large.bin"], "small.bin is gone from the service")
        #expect(state.rows.map(\.state) == [.downloading, .queued])
        #expect(state.rows[0].completed == 6 << 20)
        #expect(state.selection == 1)
        #expect(header(state).contains("elapsed 0:12"))
        #expect(!header(state).contains("service"))
        // Keys reach the service again.
        _ = update(&state, .key(.up))
        #expect(update(&state, .key(.character("p"))) == [.pause(1)])
    }

    /// A screen attached from the start gets `.live` after its first snapshot: nothing to replace.
    @Test func theFirstSnapshotsEndChangesNothing() {
        var state = attached()
        let before = state
        #expect(update(&state, .service(.live)) == [])
        #expect(state == before)
    }

    @Test func theLineFitsANarrowScreen() {
        var state = attached()
        state.size = Size(columns: 30, rows: 6)
        _ = update(&state, .service(.lost(after: .seconds(60))))
        _ = update(&state, .service(.failed("the service could not start: see /home/u/.local/state/haul/service.log")))
        let line = header(state)
        #expect(DisplayWidth.of(line) == 30)
        #expect(line.contains("service stopped"), "\(line)")
        state.size = Size(columns: 12, rows: 6)
        #expect(DisplayWidth.of(header(state)) <= 12)
        state.unicode = false
        state.size = Size(columns: 100, rows: 6)
        #expect(header(state).contains("service stopped; reconnecting~ (1 attempt failed: the service could not start"))
    }

    // MARK: the loop, on a manual clock

    /// A service the test runs: each connection's events are a stream the test feeds and ends, and each
    /// attempt to connect succeeds or fails as the test says.
    final class ScriptedService: Sendable {
        private struct State {
            var streams: [AsyncStream<ServiceLink.Feed>.Continuation] = []
            var attempts = 0
            var refuse = false
            /// Tests waiting for this many connections.
            var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        }
        private let state = NIOLockedValueBox(State())

        var link: ServiceLink {
            ServiceLink(
                events: {
                    let (stream, continuation) = AsyncStream.makeStream(of: ServiceLink.Feed.self)
                    let ready = self.state.withLockedValue { state in
                        state.streams.append(continuation)
                        let count = state.streams.count
                        defer { state.waiters.removeAll { $0.count <= count } }
                        return state.waiters.filter { $0.count <= count }.map(\.continuation)
                    }
                    for waiter in ready { waiter.resume() }
                    return stream
                },
                connect: { () async throws(HaulError) in
                    let refused = self.state.withLockedValue { state in
                        state.attempts += 1
                        return state.refuse
                    }
                    if refused { throw HaulError(.other, "cannot reach the service at /s/haul.sock: no answer") }
                })
        }

        var attempts: Int { state.withLockedValue(\.attempts) }

        /// Returns once the screen has opened `count` event streams (connections) in all.
        func waitForConnections(_ count: Int) async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLockedValue { state in
                    if state.streams.count >= count { return true }
                    state.waiters.append((count, continuation))
                    return false
                }
                if ready { continuation.resume() }
            }
        }

        func refuse(_ refuse: Bool) { state.withLockedValue { $0.refuse = refuse } }

        /// Feeds the latest connection.
        func send(_ parts: ServiceLink.Feed...) {
            let stream = state.withLockedValue(\.streams.last)
            for part in parts { stream?.yield(part) }
        }

        /// The service goes away: the latest connection's events end.
        func stop() {
            state.withLockedValue(\.streams.last)?.finish()
        }
    }

    @Test func theLoopSaysTheServiceStoppedReconnectsAfterTheWaitAndResyncs() async throws {
        let screen = FakeScreen(size: Size(columns: 120, rows: 12))
        let clock = ManualClock()
        let service = ScriptedService()
        let loop = AppLoop(manager: ScriptedControl(outlivesFrontEnd: true), service: service.link, screen: screen,
                           clock: clock, frameInterval: .zero) { url, _ in DownloadJob(url: url, outputDirectory: "/nowhere") }
        var state = AppState(size: Size(columns: 1, rows: 1))
        state.attached = true
        let exit = Task { try await loop.run(state, urls: []) }
        func waitFor(_ what: String, _ condition: @escaping @Sendable ([String]) -> Bool) async throws {
            try await within(.seconds(10), what) { await screen.waitUntil(condition) }
        }
        @Sendable func row(_ lines: [String], _ name: String) -> String? {
            lines.first { $0.dropFirst().hasPrefix(name + " ") }
        }

        try await within(.seconds(10), "the first connection") { await service.waitForConnections(1) }
        service.send(.events([.added(id: 1, url: "http://h/medium.bin", file: "medium.bin"), .state(id: 1, .downloading)]),
                     .live)
        try await waitFor("the download") { row($0, "medium.bin")?.contains("downloading") == true }

        // The service stops: it pauses what runs, then its stream ends.
        service.refuse(true)
        service.send(.events([.state(id: 1, .paused)]))
        service.stop()
        try await waitFor("the line") { $0[0].contains("service stopped; reconnecting…") }
        screen.type(.character("p"))
        try await waitFor("the key refused") { $0.last?.contains("Not sent: the service stopped") == true }

        // The first attempt after 1 s on the loop's clock, not before; it fails, and the next waits 2 s.
        await clock.waitForSleepers(1)
        clock.advance(by: .milliseconds(999))
        #expect(service.attempts == 0)
        clock.advance(by: .milliseconds(1))
        try await waitFor("the failed attempt") { $0[0].contains("(1 attempt failed: cannot reach the service") }
        #expect(service.attempts == 1)
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(1))
        #expect(service.attempts == 1, "the second attempt waits 2 s")
        service.refuse(false)
        clock.advance(by: .seconds(1))

        // Back: the new snapshot, whole, replaces what was shown; the download runs again.
        try await within(.seconds(10), "the second connection") { await service.waitForConnections(2) }
        #expect(service.attempts == 2)
        service.send(.events([.added(id: 1, url: "http://h/medium.bin", file: "medium.bin"), .state(id: 1, .downloading)]),
                     .live)
        try await waitFor("the download running again") { lines in
            row(lines, "medium.bin")?.contains("downloading") == true && lines[0].contains("elapsed")
                && !lines[0].contains("service")
        }

        // Gone again, q leaves at once, during the wait.
        service.stop()
        try await waitFor("the line again") { $0[0].contains("service stopped; reconnecting…") }
        screen.type(.character("q"))
        #expect(try await exit.value == 0)
        #expect(screen.stopped)
    }
}

extension Effect {
    var reconnectDelay: Duration? {
        if case .reconnect(let delay) = self { return delay }
        return nil
    }
}
