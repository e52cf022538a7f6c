import Foundation
import HaulCore
import HaulTorrent
import Testing
import TestSupport

/// Ctrl-C in a torrent's run, and the run after it.
@Suite("Torrent stop and resume")
struct TorrentResumeTests {
    @Test("SIGINT leaves the .part and resume data; the next run fetches only what was not verified")
    func interruptAndResume() async throws {
        let swarm = try Swarm()
        defer { swarm.stop() }
        let source = swarm.directory.file("seed")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        let size = 6 << 20
        let data = randomBytes(size, seed: 11)
        try data.write(to: URL(fileURLWithPath: source + "/big.bin"))
        let torrent = try await swarm.makeTorrent(of: source + "/big.bin", named: "big.torrent")
        let hash = try Swarm.infoHash(of: torrent)
        try await swarm.startTracker(serving: [hash])
        // Slow enough that the first run is stopped part-way.
        try swarm.seed(torrent, from: source, uploadLimit: "1M")
        try await swarm.waitForSeeders(hash)
        let out = swarm.directory.file("out")
        let first = try HaulProcess(leechOptions + ["--json", "-o", out, torrent], in: swarm.directory.path)
        let watchdog = first.killed(after: torrentLimit)
        defer { watchdog.cancel() }
        let line = await first.firstLine { line in
            guard let event = Self.event(line), event["event"] as? String == "progress" else { return false }
            return (event["bytes"] as? Int ?? 0) >= 1 << 20
        }
        let verified = try #require(line.flatMap(Self.event)?["bytes"] as? Int)
        first.send(SIGINT)
        let stopped = await first.wait(limit: torrentLimit)
        #expect(stopped.status == 130, "\(stopped)")
        #expect(FileManager.default.fileExists(atPath: out + "/big.bin.part"))
        #expect(FileManager.default.fileExists(atPath: out + "/haul-\(hash).part.resume"))
        #expect(!FileManager.default.fileExists(atPath: out + "/big.bin"))

        let second = try await HaulProcess.run(leechOptions + ["--json", "-o", out, torrent], in: swarm.directory.path, limit: torrentLimit)
        #expect(second.status == 0, "\(second)")
        #expect(FileManager.default.contents(atPath: out + "/big.bin") == data)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out) == ["big.bin"])
        let done = try #require(second.stdoutLines.compactMap(Self.event).first { $0["event"] as? String == "done" })
        let fetched = try #require(done["bytes"] as? Int)
        // What the first run verified is not fetched again (pieces in flight when it stopped may be).
        #expect(fetched <= size - verified + (256 << 10), "fetched \(fetched) of \(size) after \(verified) verified")
    }

    @Test("kill -9 mid-download: the next run starts from the last checkpoint, not from nothing")
    func killedAndResumed() async throws {
        let swarm = try Swarm()
        defer { swarm.stop() }
        let source = swarm.directory.file("seed")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        // Long enough at 1 MiB/s that checkpoints (every 5 s) come after the 2 MiB line, also in a loaded run.
        let size = 16 << 20
        let data = randomBytes(size, seed: 12)
        try data.write(to: URL(fileURLWithPath: source + "/big.bin"))
        let torrent = try await swarm.makeTorrent(of: source + "/big.bin", named: "big.torrent")
        let hash = try Swarm.infoHash(of: torrent)
        try await swarm.startTracker(serving: [hash])
        try swarm.seed(torrent, from: source, uploadLimit: "1M")
        try await swarm.waitForSeeders(hash)
        let out = swarm.directory.file("out")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let first = try HaulProcess(leechOptions + ["--json", "-o", out, torrent], in: swarm.directory.path)
        let watchdog = first.killed(after: torrentLimit)
        defer { watchdog.cancel() }
        let verified = 2 << 20
        let line = await first.firstLine { line in
            guard let event = Self.event(line), event["event"] as? String == "progress" else { return false }
            return (event["bytes"] as? Int ?? 0) >= verified
        }
        try #require(line != nil)
        // The checkpoint written after that line holds at least those bytes.
        let resume = "haul-\(hash).part.resume"
        try await waitForRename(into: out, named: resume)
        first.send(SIGKILL)
        _ = await first.wait(limit: torrentLimit)
        #expect(FileManager.default.fileExists(atPath: out + "/big.bin.part"))

        let second = try await HaulProcess.run(leechOptions + ["--json", "-o", out, torrent], in: swarm.directory.path,
                                               limit: torrentLimit)
        #expect(second.status == 0, "\(second)")
        #expect(FileManager.default.contents(atPath: out + "/big.bin") == data)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out) == ["big.bin"])
        let done = try #require(second.stdoutLines.compactMap(Self.event).first { $0["event"] as? String == "done" })
        let fetched = try #require(done["bytes"] as? Int)
        #expect(fetched <= size - verified, "fetched \(fetched) of \(size) after a checkpoint of \(verified) or more")
    }

    static func event(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }
}
