import Foundation
import HaulCore
import HaulTorrent
import Testing
import TestSupport

/// `haul FILE.torrent` and `haul 'magnet:?...'`, the real binary against a loopback swarm (`Swarm`).
@Suite("Torrent plain runs", .serialized)
struct TorrentRunTests {
    @Test("a single-file torrent from a transmission-cli seeder is downloaded byte-identical, with no .part or resume data left")
    func singleFile() async throws {
        let swarm = try Swarm()
        defer { swarm.stop() }
        let source = swarm.directory.file("seed")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        let data = randomBytes(3_000_000 + 123, seed: 1)
        try data.write(to: URL(fileURLWithPath: source + "/one.bin"))
        let torrent = try await swarm.makeTorrent(of: source + "/one.bin", named: "one.torrent")
        try await swarm.startTracker(serving: [try Swarm.infoHash(of: torrent)])
        try swarm.seedWithTransmission(torrent, from: source)
        try await swarm.waitForSeeders(try Swarm.infoHash(of: torrent))
        let out = swarm.directory.file("out")
        let exit = try await HaulProcess.run(leechOptions + ["-o", out, torrent], in: swarm.directory.path, limit: torrentLimit)
        #expect(exit.status == 0, "\(exit)")
        #expect(FileManager.default.contents(atPath: out + "/one.bin") == data)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out) == ["one.bin"])
        #expect(exit.stdout.contains("one.bin: done"), "\(exit)")
    }

    @Test("--select-file downloads a multi-file torrent's chosen files from aria2c and transmission-cli; the others are not created")
    func multiFileSelection() async throws {
        let swarm = try Swarm()
        defer { swarm.stop() }
        let folder = swarm.directory.file("seed/album")
        try FileManager.default.createDirectory(atPath: folder + "/disc2", withIntermediateDirectories: true)
        let files = ["a.bin": randomBytes(700_000, seed: 2), "b.bin": randomBytes(500_001, seed: 3),
                     "disc2/c.bin": randomBytes(900_000, seed: 4)]
        for (name, data) in files { try data.write(to: URL(fileURLWithPath: folder + "/" + name)) }
        let torrent = try await swarm.makeTorrent(of: folder, named: "album.torrent", pieceKiB: 16)
        let order = try TorrentMetadata.parse(torrent: Array(try #require(FileManager.default.contents(atPath: torrent))))
            .files.filter { $0.kind == .regular }.map(\.path)
        let skipped = try #require(order.firstIndex(of: "album/b.bin"))
        let chosen = (1...order.count).filter { $0 != skipped + 1 }.map(String.init).joined(separator: ",")
        try await swarm.startTracker(serving: [try Swarm.infoHash(of: torrent)])
        try swarm.seed(torrent, from: swarm.directory.file("seed"))
        try swarm.seedWithTransmission(torrent, from: swarm.directory.file("seed"))
        try await swarm.waitForSeeders(try Swarm.infoHash(of: torrent), count: 2)
        let out = swarm.directory.file("out")
        let exit = try await HaulProcess.run(leechOptions + ["-o", out, "--select-file", chosen, torrent],
                                             in: swarm.directory.path, limit: torrentLimit)
        #expect(exit.status == 0, "\(exit)")
        #expect(FileManager.default.contents(atPath: out + "/album/a.bin") == files["a.bin"])
        #expect(FileManager.default.contents(atPath: out + "/album/disc2/c.bin") == files["disc2/c.bin"])
        #expect(!FileManager.default.fileExists(atPath: out + "/album/b.bin"))
        #expect(!FileManager.default.fileExists(atPath: out + "/album/b.bin.part"))
    }

    @Test("a magnet gets its metadata from the seeder, then the file")
    func magnet() async throws {
        let swarm = try Swarm()
        defer { swarm.stop() }
        let source = swarm.directory.file("seed")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        let data = randomBytes(1_500_000, seed: 5)
        try data.write(to: URL(fileURLWithPath: source + "/film.bin"))
        let torrent = try await swarm.makeTorrent(of: source + "/film.bin", named: "film.torrent")
        let hash = try Swarm.infoHash(of: torrent)
        try await swarm.startTracker(serving: [hash])
        try swarm.seed(torrent, from: source)
        try await swarm.waitForSeeders(hash)
        let out = swarm.directory.file("out")
        let tracker = swarm.announce.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let magnet = "magnet:?xt=urn:btih:\(hash)&tr=\(tracker)"
        let exit = try await HaulProcess.run(leechOptions + ["--json", "-o", out, magnet], in: swarm.directory.path, limit: torrentLimit)
        #expect(exit.status == 0, "\(exit)")
        #expect(FileManager.default.contents(atPath: out + "/film.bin") == data)
        #expect(exit.stdout.contains("\"event\":\"done\""), "\(exit)")
    }

    @Test("malformed bencode: one line, exit 7, nothing written")
    func malformed() async throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        try Data("d4:infod6:lengthi12e4:name".utf8).write(to: URL(fileURLWithPath: directory.file("bad.torrent")))
        let exit = try await HaulProcess.run(leechOptions + ["-o", "out", "bad.torrent"], in: directory.path, limit: torrentLimit)
        #expect(exit.status == 7, "\(exit)")
        let lines = exit.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("haul: bad.torrent: not a valid torrent"), "\(exit)")
        let written = (try? FileManager.default.contentsOfDirectory(atPath: directory.file("out"))) ?? []
        #expect(written.isEmpty, "\(written)")
    }

    @Test("a magnet no peer answers fails after --bt-metadata-timeout with one line, exit 4")
    func magnetWithoutPeers() async throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        let magnet = "magnet:?xt=urn:btih:0123456789abcdef0123456789abcdef01234567&dn=nothing"
        let exit = try await HaulProcess.run(leechOptions + ["--bt-metadata-timeout", "1", "-o", "out", magnet],
                                             in: directory.path, limit: torrentLimit)
        #expect(exit.status == 4, "\(exit)")
        let lines = exit.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("no metadata after 1 s"), "\(exit)")
    }
}
