import Foundation
import HaulCore
import HaulTorrent
import Testing
import TestSupport

/// Seeding after a torrent's files are verified: to aria2c, until the ratio.
@Suite("Torrent seeding")
struct TorrentSeedTests {
    @Test("haul seeds to an aria2c leecher until its ratio reaches --seed-ratio, then ends")
    func seedsUntilRatio() async throws {
        let swarm = try Swarm()
        defer { swarm.stop() }
        let source = swarm.directory.file("seed")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        let data = randomBytes(2_000_000 + 7, seed: 21)
        try data.write(to: URL(fileURLWithPath: source + "/share.bin"))
        let torrent = try await swarm.makeTorrent(of: source + "/share.bin", named: "share.torrent")
        try await swarm.startTracker(serving: [try Swarm.infoHash(of: torrent)])
        let seeder = try swarm.seed(torrent, from: source)
        try await swarm.waitForSeeders(try Swarm.infoHash(of: torrent))
        let out = swarm.directory.file("out")
        let haul = try HaulProcess(loopbackOptions + ["--json", "--seed-ratio", "1.0", "-o", out, torrent],
                                   in: swarm.directory.path)
        let watchdog = haul.killed(after: torrentLimit)
        defer { watchdog.cancel() }
        let seeding = await haul.firstLine { Self.event($0)?["kind"] as? String == "seeding" }
        try #require(seeding != nil, "haul never started seeding")
        #expect(FileManager.default.contents(atPath: out + "/share.bin") == data)
        // The first seeder gone, the leecher's every byte comes from haul.
        kill(seeder.pid, SIGKILL)
        let leeched = swarm.directory.file("leech")
        #expect(try await swarm.leech(torrent, into: leeched) == 0)
        #expect(FileManager.default.contents(atPath: leeched + "/share.bin") == data)
        let exit = await haul.wait(limit: torrentLimit)
        #expect(exit.status == 0, "\(exit)")
        let events = exit.stdoutLines.compactMap(Self.event)
        let seeded = try #require(events.first { $0["kind"] as? String == "seeded" }?["fact"] as? [String: Any])
        let body = try #require(seeded["seeded"] as? [String: Any])
        #expect((body["ratio"] as? Double ?? 0) >= 1.0, "\(body)")
        // done is the download's last word, after the seeding.
        #expect(events.last { $0["id"] as? Int == 1 }?["event"] as? String == "done", "\(exit.stdout)")
    }

    @Test("--seed-ratio and --seed-time as aria2 reads them")
    func seedingBounds() {
        let gib: Int64 = 1 << 30
        let byRatio = TorrentJob.Seeding(ratio: 1.5, time: nil)
        #expect(!byRatio.isOver(uploaded: gib, size: gib, elapsed: .seconds(1_000_000)))
        #expect(byRatio.isOver(uploaded: gib * 3 / 2, size: gib, elapsed: .zero))
        let byTime = TorrentJob.Seeding(ratio: nil, time: .seconds(60))
        #expect(!byTime.isOver(uploaded: gib * 100, size: gib, elapsed: .seconds(59)))
        #expect(byTime.isOver(uploaded: 0, size: gib, elapsed: .seconds(60)))
        let either = TorrentJob.Seeding(ratio: 1.0, time: .seconds(60))
        #expect(either.isOver(uploaded: gib, size: gib, elapsed: .zero))
        #expect(either.isOver(uploaded: 0, size: gib, elapsed: .seconds(60)))
        #expect(TorrentJob.Seeding.none.isOver(uploaded: 0, size: gib, elapsed: .zero))
        let forever = TorrentJob.Seeding(ratio: nil, time: nil)
        #expect(!forever.isOver(uploaded: gib * 1000, size: gib, elapsed: .seconds(1_000_000)))
    }

    static func event(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }
}
