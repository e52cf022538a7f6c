import Foundation
import HaulCore
import NIOConcurrencyHelpers
import SampleServer
import Testing
import TestSupport

/// A link that expired keeps its bytes: `haul refresh ID URL` and `--refresh-with CMD` through the real binary,
/// against the sample server's links that expire (`/signed/NAME?expires=T&sig=...`, checked against the server's
/// clock, which each test moves on itself).
@Suite(.serialized) struct RefreshTests {
    /// The sample server's clock: seconds, moved on only by the test.
    final class ServerClock: Sendable {
        private let seconds = NIOLockedValueBox<Int64>(1_000_000)
        var now: Int64 { seconds.withLockedValue { $0 } }
        func advance(by delta: Int64) { seconds.withLockedValue { $0 += delta } }
    }

    static let size = 20 << 20
    /// Where the first body holds (the test moves the clock past the link's expiry meanwhile), and where it is cut.
    static let holdAt = 4 << 20
    static let dropAt = 5 << 20

    static func configuration(_ clock: ServerClock, _ log: LockedLines) -> SampleServerConfiguration {
        var configuration = SampleServerConfiguration(port: 0, jpegs: false, requestLog: { log.append($0) })
        // `twin.bin` is as large as `medium.bin`, with other bytes; `small.bin` is smaller.
        configuration.files = [GeneratedFile(name: "medium.bin", size: size), GeneratedFile(name: "twin.bin", size: size),
                                GeneratedFile(name: "small.bin", size: 1 << 20)]
        configuration.now = { clock.now }
        configuration.signedLinkLifetime = 60
        return configuration
    }

    /// A link to `name` that lasts 60 s of the server's clock from now.
    static func link(_ server: SampleServer, _ name: String, _ clock: ServerClock) -> String {
        server.baseURL + server.signedPath(name, expires: clock.now + 60)
    }

    /// Cuts each of the first `drops` bodies of `medium.bin` at `dropAt` bytes from its start, holding the file at
    /// `holdAt` and `holdAt + dropAt` first.
    static func expiringFaults(drops: Int) -> SampleServerFaults {
        var faults = SampleServerFaults()
        faults.only = "medium.bin"
        faults.dropAfterBytes = dropAt
        faults.dropLimit = drops
        faults.holdAt = Array([holdAt, holdAt + dropAt].prefix(drops))
        return faults
    }

    /// The ranges asked of `medium.bin` from a resume (the log's lines "GET medium.bin bytes=N- -> 206").
    static func resumedAt(_ log: LockedLines) -> [Int] {
        log.snapshot.compactMap { line -> Int? in
            guard line.hasPrefix("GET medium.bin bytes="), line.contains("- -> 206") else { return nil }
            return Int(line.dropFirst("GET medium.bin bytes=".count).prefix { $0.isNumber })
        }.filter { $0 > 0 }
    }

    /// Whether the server holds a body at its `n`th hold before `ended` (haul's process) does: a haul that ends
    /// first (it failed) never reaches the hold, which would otherwise be waited for forever.
    static func held(_ server: SampleServer, _ n: Int, before ended: Task<HaulProcess.Exit, Never>) async -> Bool {
        let (signals, signal) = AsyncStream.makeStream(of: Bool.self)
        Task {
            await server.waitUntilHeld(n)
            signal.yield(true)
        }
        Task {
            _ = await ended.value
            signal.yield(false)
        }
        for await first in signals { return first }
        return false
    }

    @Test func anExpiredLinkIsRefreshedAndTheDownloadContinuesFromItsBytes() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        let clock = ServerClock()
        let log = LockedLines()
        try await withSampleServer(Self.configuration(clock, log)) { server in
            server.setFaults(Self.expiringFaults(drops: 1))
            let add = try await SessionTests.haul(["add", "-o", "out", Self.link(server, "medium.bin", clock)], home, in: dir)
            #expect(add.status == 0, "\(add.stderr)")
            // Held at 4 MiB: the link expires meanwhile; the body is then cut at 5 MiB, and the retry's Range
            // request meets the expired link: 403.
            await server.waitUntilHeld()
            clock.advance(by: 120)
            server.release()
            try await SessionTests.waitFor("the download to fail", home) {
                if case .failed = $0[1]?.state { true } else { false }
            }
            let listed = try await SessionTests.list(home, in: dir)
            #expect((listed.first?["error"] as? String)?.contains("403") == true, "\(listed)")
            let part = dir.file("out/medium.bin.part")
            guard case .found(let state) = ResumeState.load(from: part + ".json") else {
                Issue.record("no resume state beside the part")
                return
            }
            let offset = try #require(state.completed.first?.end)
            #expect(offset > 0 && offset <= Int64(Self.dropAt))
            let stateBefore = try Data(contentsOf: URL(fileURLWithPath: part + ".json"))
            let partBefore = try Data(contentsOf: URL(fileURLWithPath: part))

            // Other files: refused with one line, the part and its state as they were.
            let larger = try await SessionTests.haul(["refresh", "1", Self.link(server, "small.bin", clock)], home, in: dir)
            #expect(larger.status == 2)
            #expect(larger.stderr.hasSuffix("serves another file: 1048576 bytes, not \(Self.size)\n"), "\(larger.stderr)")
            let twin = try await SessionTests.haul(["refresh", "1", Self.link(server, "twin.bin", clock)], home, in: dir)
            #expect(twin.status == 2)
            #expect(twin.stderr.contains("serves another file: other bytes at "), "\(twin.stderr)")
            #expect(twin.stderr.split(separator: "\n").count == 1, "\(twin.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: part + ".json")) == stateBefore)
            #expect(try Data(contentsOf: URL(fileURLWithPath: part)) == partBefore)
            // An unknown download: a usage error.
            let unknown = try await SessionTests.haul(["refresh", "9", Self.link(server, "medium.bin", clock)], home, in: dir)
            #expect(unknown.status == 2 && unknown.stderr == "haul: refresh: no download with id 9\n", "\(unknown)")

            // A fresh link to the same file: the download continues from the bytes on disk.
            let fresh = Self.link(server, "medium.bin", clock)
            let refresh = try await SessionTests.haul(["refresh", "1", fresh], home, in: dir)
            #expect(refresh.status == 0, "\(refresh.stderr)")
            try await SessionTests.waitFor("the download to end", home) { $0[1]?.state == .done }
            #expect(try FileDigest.hex(of: dir.file("out/medium.bin")) == expectedSHA256(of: GeneratedFile(name: "medium.bin", size: Self.size)))
            #expect(Self.resumedAt(log) == [Int(offset)], "\(log.snapshot)")
            let after = try await SessionTests.list(home, in: dir)
            #expect(after.first?["url"] as? String == fresh)
        }
    }

    @Test func aRunningDownloadIsNotRefreshed() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        let clock = ServerClock()
        let log = LockedLines()
        try await withSampleServer(Self.configuration(clock, log)) { server in
            var faults = SampleServerFaults()
            faults.holdAt = [Self.holdAt]
            server.setFaults(faults)
            let add = try await SessionTests.haul(["add", "-o", "out", Self.link(server, "medium.bin", clock)], home, in: dir)
            #expect(add.status == 0, "\(add.stderr)")
            await server.waitUntilHeld()
            let refused = try await SessionTests.haul(["refresh", "1", Self.link(server, "medium.bin", clock)], home, in: dir)
            #expect(refused.status == 2)
            #expect(refused.stderr == "haul: refresh: download 1 is running; pause it first\n", "\(refused.stderr)")
            server.release()
            try await SessionTests.waitFor("the download to end", home) { $0[1]?.state == .done }
        }
    }

    /// `--refresh-with` a script that asks the server for a fresh link (curl, run without a shell): a download
    /// whose link expires twice ends whole, each time continuing from the bytes on disk.
    @Test func refreshWithACommandOutlastsTwoExpiries() async throws {
        let dir = TempDirectory()
        let clock = ServerClock()
        let log = LockedLines()
        try await withSampleServer(Self.configuration(clock, log)) { server in
            server.setFaults(Self.expiringFaults(drops: 2))
            let told = dir.file("told.txt")
            let script = dir.file("fresh-link")
            try writeScript("""
                #!/bin/sh
                printf '%s|%s|%s|%s|%s|%s|%s\\n' "$1" "$2" "$HAUL_URL" "$HAUL_ORIGIN_URL" "$HAUL_REFERER" "$HAUL_NAME" "$HAUL_ID" >> '\(told)'
                exec curl -sf '\(server.baseURL)/sign/medium.bin'
                """, to: script)
            let first = Self.link(server, "medium.bin", clock)
            let page = "https://example.org/watch?v=1"
            let haul = try HaulProcess(["--plain", "-o", "out", "--referer", page, "--refresh-with", "\(script) {referer} {origin}",
                                        first], in: dir.path)
            let ended = Task { await haul.wait() }
            for hold in 1...2 {
                guard await Self.held(server, hold, before: ended) else {
                    Issue.record("haul ended before the body held at \(hold): \(await ended.value)")
                    return
                }
                clock.advance(by: 120)
                server.release()
            }
            let exit = await ended.value
            #expect(exit.status == 0, "\(exit)")
            #expect(try FileDigest.hex(of: dir.file("out/medium.bin")) == expectedSHA256(of: GeneratedFile(name: "medium.bin", size: Self.size)))
            #expect(Self.resumedAt(log) == [Self.dropAt, 2 * Self.dropAt], "\(log.snapshot)")
            let lines = try String(contentsOfFile: told, encoding: .utf8).split(separator: "\n").map(String.init)
            #expect(lines.count == 2, "\(lines)")
            let fields = lines.first?.split(separator: "|", omittingEmptySubsequences: false).map(String.init) ?? []
            #expect(fields == [page, first, first, first, page, "medium.bin", "1"], "\(fields)")
            // The second time, the address that stopped working is the first refresh's, and the origin the first.
            let second = lines.last?.split(separator: "|", omittingEmptySubsequences: false).map(String.init) ?? []
            #expect(second.count == 7 && second[1] == first && second[2] != first && second[3] == first, "\(second)")
            #expect(exit.stdout.contains("continuing from"), "\(exit.stdout)")
        }
    }

    /// Links good for one request (one-time tokens): each new address passes the check and is then used up, so
    /// the download never gets a byte further. After three new addresses in a row that brought nothing, it fails
    /// with its own error and why; the command ran three times, not forever.
    @Test func refreshesThatBringNothingStopAfterThree() async throws {
        let dir = TempDirectory()
        let clock = ServerClock()
        let log = LockedLines()
        var configuration = Self.configuration(clock, log)
        configuration.signedLinkUses = 1
        try await withSampleServer(configuration) { server in
            server.setFaults(Self.expiringFaults(drops: 1))
            server.release()  // the hold at 4 MiB lets the body go on at once
            let told = dir.file("told.txt")
            let script = dir.file("fresh-link")
            try writeScript("""
                #!/bin/sh
                echo "$HAUL_URL" >> '\(told)'
                exec curl -sf '\(server.baseURL)/sign/medium.bin'
                """, to: script)
            let exit = try await HaulProcess.run(["--plain", "-o", "out", "--refresh-with", script,
                                                  Self.link(server, "medium.bin", clock)], in: dir.path)
            #expect(exit.status == 8, "\(exit)")
            #expect(exit.stderr.contains(
                "server answered 403 Forbidden; --refresh-with did not help: 3 new addresses in a row brought no byte"),
                    "\(exit.stderr)")
            #expect(try String(contentsOfFile: told, encoding: .utf8).split(separator: "\n").count == 3)
            #expect(FileManager.default.fileExists(atPath: dir.file("out/medium.bin.part")), "the bytes stay for later")
        }
    }

    /// A command that prints nothing: the download fails with its own error and the reason the refresh did not help.
    @Test func aRefreshCommandThatGivesNothingFailsTheDownload() async throws {
        let dir = TempDirectory()
        let clock = ServerClock()
        let log = LockedLines()
        try await withSampleServer(Self.configuration(clock, log)) { server in
            let expired = server.baseURL + server.signedPath("small.bin", expires: clock.now - 1)
            let exit = try await HaulProcess.run(["--plain", "-o", "out", "--refresh-with", "true", expired], in: dir.path)
            #expect(exit.status == 8, "\(exit)")
            #expect(exit.stderr.contains("server answered 403 Forbidden; --refresh-with did not help: 'true' printed no address"),
                    "\(exit.stderr)")
            // The same from the config file's key.
            try "refresh-with = \"true\"\n".write(toFile: dir.file("config.toml"), atomically: true, encoding: .utf8)
            let configured = try await HaulProcess.run(["--config", dir.file("config.toml"), "--plain", "-o", "out2", expired],
                                                       in: dir.path)
            #expect(configured.status == 8, "\(configured)")
            #expect(configured.stderr.contains("--refresh-with did not help: 'true' printed no address"), "\(configured.stderr)")
        }
    }
}
