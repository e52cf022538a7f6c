import HaulCore
import NIOConcurrencyHelpers
import SampleServer
import Testing
import TestSupport
@testable import HaulTUI

/// The loop with everything real but the terminal (a `FakeScreen`) and the clock (a `ManualClock`):
/// the in-process sample server, the curl driver, a `DownloadManager`. Frames are not capped here (the
/// manual clock stands still); `framesArePacedOnTheLoopsClock` covers the cap.
@Suite struct AppLoopTests {
    /// Slow enough that nothing finishes while a test looks at it.
    static let slowRate = 256 << 10

    private struct Running {
        let screen: FakeScreen
        let clock: ManualClock
        let manager: DownloadManager
        let exit: Task<Int32, any Error>
        let directory: TempDirectory
    }

    private func start(server: String?, urls: [String] = [], view: AppState.View = .files) -> Running {
        let screen = FakeScreen()
        let clock = ManualClock()
        let manager = DownloadManager(concurrency: 4)
        let directory = TempDirectory()
        let path = directory.path
        // The listing's timeouts stretch as every deadline does: the in-process server shares two cores with
        // the whole suite (under the sanitizer one CI run saw no listing in 200 s after the 15 s stall).
        var options = TransferOptions()
        options.connectTimeout = TestEnvironment.bound(.seconds(10)).seconds
        options.stallTimeout = TestEnvironment.bound(.seconds(15)).seconds
        let files = FilesClient.curl(options)
        let loop = AppLoop(manager: manager, screen: screen, clock: clock, files: files, frameInterval: .zero) { url, segments in
            var job = DownloadJob(url: url, outputDirectory: path)
            job.segments = segments
            return job
        }
        var state = AppState(size: Size(columns: 1, rows: 1))
        state.files.server = server
        state.view = view
        let exit = Task { try await loop.run(state, urls: urls) }
        return Running(screen: screen, clock: clock, manager: manager, exit: exit, directory: directory)
    }

    private func waitFor(_ screen: FakeScreen, _ what: String, _ condition: @escaping @Sendable ([String]) -> Bool)
        async throws
    {
        try await within(.seconds(10), what) { await screen.waitUntil(condition) }
        #expect(condition(screen.lines), "\(what)")
    }

    private static func row(_ lines: [String], _ name: String) -> String? {
        lines.first { $0.dropFirst().hasPrefix(name + " ") }
    }

    @Test func listsTheServerDownloadsFromItAndCancelAllStopsEverythingAndTheClock() async throws {
        try await withSampleServer(rate: Self.slowRate) { server in
            let app = start(server: server.baseURL)
            try await waitFor(app.screen, "the files listing and the status line") { lines in
                Self.row(lines, "medium.bin") != nil && lines.contains { $0.contains("SuperStorage sample server") }
            }

            // huge, large, medium, small: Enter on medium (one connection), m on large (in parts).
            app.screen.type(.down, .down, .enter, .up, .character("m"))
            try await waitFor(app.screen, "two downloads") {
                Self.row($0, "medium.bin")?.contains("downloading") == true
                    && Self.row($0, "large.bin")?.contains("downloading") == true
            }
            // The clock task started with the first download and sleeps on the injected clock.
            await app.clock.waitForSleepers(1)
            app.clock.advance(by: .seconds(1))
            try await waitFor(app.screen, "one second on the clock") { $0[0].contains("elapsed 0:01") }

            app.screen.type(.tab)
            try await waitFor(app.screen, "the downloads view") { $0[0].contains("Downloads") }
            app.screen.type(.character("C"))
            try await waitFor(app.screen, "every row cancelled") { lines in
                ["medium.bin", "large.bin"].allSatisfy { Self.row(lines, $0)?.hasSuffix("cancelled") == true }
            }
            // The rows say cancelled when the engine reports it; the task handles go as each task ends.
            try await within(10, "the manager idle") { await app.manager.waitUntilIdle() }
            #expect(await app.manager.runningCount == 0, "every stored task handle is gone")
            #expect(app.clock.sleeperCount == 0, "the clock task is cancelled")
            app.clock.advance(by: .seconds(5))
            #expect(app.screen.lines[0].contains("elapsed 0:01"))

            // Nothing runs: q leaves at once; cancelled downloads make the exit code 10.
            app.screen.type(.character("q"))
            #expect(try await app.exit.value == FailureCategory.cancelled.exitCode)
            #expect(app.screen.stopped)
            #expect(app.directory.listing().contains("medium.bin.part"), "the .part stays for a later resume")
        }
    }

    @Test func quitAsksAndLeavesDownloadsPausedAndResumable() async throws {
        try await withSampleServer(rate: Self.slowRate) { server in
            let app = start(server: nil, urls: [server.downloadURL("medium.bin")], view: .downloads)
            try await waitFor(app.screen, "a download") { Self.row($0, "medium.bin")?.contains("downloading") == true }
            app.screen.type(.character("q"))
            try await waitFor(app.screen, "the question") { $0.contains { $0.contains("Quit and pause it?") } }
            #expect(await app.manager.runningCount == 1, "asking does not stop anything")
            app.screen.type(.character("y"))
            #expect(try await app.exit.value == FailureCategory.cancelled.exitCode)
            #expect(await app.manager.states.map(\.state) == [.paused])
            #expect(app.directory.listing().contains("medium.bin.part"))
        }
    }

    /// `u` on a paused download: the address typed is checked against its bytes, and the footer says what came
    /// of it (another file refused; the same file at another address continues from the part).
    @Test func uGivesAPausedDownloadANewAddressAndSaysWhatCameOfIt() async throws {
        try await withSampleServer(rate: Self.slowRate) { server in
            let app = start(server: nil, urls: [server.downloadURL("medium.bin")], view: .downloads)
            try await waitFor(app.screen, "a download") { Self.row($0, "medium.bin")?.contains("downloading") == true }
            app.screen.type(.character("p"))
            try await waitFor(app.screen, "the pause") { Self.row($0, "medium.bin")?.contains("paused") == true }
            await app.manager.waitUntilStopped([1])
            app.screen.type(.character("u"))
            try await waitFor(app.screen, "the prompt") { $0.contains { $0.contains("New address for download 1") } }
            for c in server.downloadURL("large.bin") { app.screen.type(.character(c)) }
            app.screen.type(.enter)
            try await waitFor(app.screen, "the refusal") { $0.contains { $0.contains("serves another file: 209715200 bytes, not 20971520") } }
            #expect(await app.manager.states.map(\.state) == [.paused])
            app.screen.type(.character("u"))
            for c in server.baseURL + server.signedPath("medium.bin", expires: Int64.max / 2) { app.screen.type(.character(c)) }
            app.screen.type(.enter)
            try await waitFor(app.screen, "the notice") { $0.contains { $0.contains("Download 1 continues from ") } }
            app.screen.type(.character("q"), .character("y"))
            _ = try await app.exit.value
        }
    }

    @Test func anInterruptQuitsPausing() async throws {
        try await withSampleServer(rate: Self.slowRate) { server in
            let app = start(server: nil, urls: [server.downloadURL("medium.bin")], view: .downloads)
            try await waitFor(app.screen, "a download") { Self.row($0, "medium.bin")?.contains("downloading") == true }
            app.screen.send(.interrupt)
            #expect(try await app.exit.value == FailureCategory.cancelled.exitCode)
            #expect(await app.manager.states.map(\.state) == [.paused])
            #expect(app.clock.sleeperCount == 0)
        }
    }

    @Test func resizeRelaysOut() async throws {
        let app = start(server: nil, view: .downloads)
        try await waitFor(app.screen, "the first frame") { $0.count == 30 }
        app.screen.send(.resize(Size(columns: 20, rows: 5)))
        try await waitFor(app.screen, "a 20x5 frame") { $0.count == 5 }
        #expect(app.screen.lines.allSatisfy { DisplayWidth.of($0) <= 20 })
        app.screen.type(.character("q"))
        #expect(try await app.exit.value == 0, "nothing downloaded, nothing failed")
    }

    @Test func anUnreachableServerSaysSo() async throws {
        // Port 9 (discard) is closed on the loopback interface of any test machine.
        let app = start(server: "http://127.0.0.1:9", view: .files)
        try await waitFor(app.screen, "the failure") { $0.contains { $0.contains("Cannot list files:") } }
        app.screen.type(.character("q"))
        #expect(try await app.exit.value == 0)
    }

    @Test func framesAreCappedNearThirtyASecond() {
        var pacer = FramePacer<ManualClock.Instant>(interval: .seconds(1) / 30)
        let start = ManualClock().now
        #expect(pacer.canDraw(at: start))
        #expect(pacer.nextFrame(after: start) == start)
        pacer.drew(at: start)
        #expect(!pacer.canDraw(at: start.advanced(by: .milliseconds(10))))
        #expect(pacer.nextFrame(after: start.advanced(by: .milliseconds(10))) == start.advanced(by: .seconds(1) / 30))
        #expect(pacer.canDraw(at: start.advanced(by: .milliseconds(34))))
    }

    /// A server whose two answers (the list, then the status line) come when the test releases them.
    private struct GatedFiles {
        let client: FilesClient
        let list: AsyncStream<[UInt8]>.Continuation
        let status: AsyncStream<[UInt8]>.Continuation

        init() {
            let (lists, list) = AsyncStream.makeStream(of: [UInt8].self)
            let (statuses, status) = AsyncStream.makeStream(of: [UInt8].self)
            client = FilesClient { url in
                for await body in url.hasSuffix("/status") ? statuses : lists { return body }
                throw FilesError(message: "no answer")
            }
            self.list = list
            self.status = status
        }
    }

    /// On the loop's clock: an event drawn at once when the last frame is old enough, else one delayed frame
    /// when it is due; a key at once, whatever is pending; and with nothing happening, nothing waits.
    @Test func framesArePacedOnTheLoopsClock() async throws {
        let screen = FakeScreen()
        let clock = ManualClock()
        let files = GatedFiles()
        let interval = Duration.seconds(1) / 30
        let loop = AppLoop(manager: DownloadManager(concurrency: 1), screen: screen, clock: clock, files: files.client,
                           frameInterval: interval) { url, _ in DownloadJob(url: url, outputDirectory: "/nowhere") }
        var state = AppState(size: Size(columns: 1, rows: 1))
        state.files.server = "http://files.test"
        state.view = .files
        let exit = Task { try await loop.run(state, urls: []) }

        // The first frame at once; "loading" changes the state in the same instant, so its frame waits.
        await clock.waitForSleepers(1)
        #expect(screen.frameCount == 1)
        #expect(!screen.lines.contains { $0.contains("Loading the file list") })
        clock.advance(by: interval - .milliseconds(1))
        #expect(clock.sleeperCount == 1 && screen.frameCount == 1, "not before it is due")
        clock.advance(by: .milliseconds(1))
        try await waitFor(screen, "the delayed frame") { $0.contains { $0.contains("Loading the file list") } }
        #expect(screen.frameCount == 2)

        // The list arrives in the instant of that frame: drawn one interval later.
        files.list.yield(Array(#"[{"name":"a.bin","size":1,"date":"d"},{"name":"b.bin","size":2,"date":"d"}]"#.utf8))
        await clock.waitForSleepers(1)
        #expect(screen.frameCount == 2 && !screen.lines.contains { $0.contains("a.bin") })
        clock.advance(by: interval)
        try await waitFor(screen, "the list") { $0.contains { $0.contains("b.bin") } }
        #expect(screen.frameCount == 3)

        // The status line waits for its frame, but a key does not: drawn at once with both, and the
        // delayed frame is dropped.
        files.status.yield(Array("SuperStorage test server".utf8))
        await clock.waitForSleepers(1)
        screen.type(.character("?"))
        try await waitFor(screen, "the key's frame") { lines in
            lines.contains { $0.contains("SuperStorage test server") } && lines.contains { $0.contains("Keys") }
        }
        #expect(screen.frameCount == 4)
        #expect(clock.sleeperCount == 0, "idle: nothing waits on the clock")

        screen.type(.character("q"), .character("q"))  // closes the help, then quits
        #expect(try await exit.value == 0)
        #expect(clock.sleeperCount == 0)
    }
}
