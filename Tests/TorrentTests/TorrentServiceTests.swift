import Foundation
import HaulCore
import HaulServiceClient
import HaulTorrent
import Testing
import TestSupport

/// Torrents and magnets in the service's queue (`haul add`), against a loopback swarm.
@Suite("Torrents in the service")
struct TorrentServiceTests {
    /// `haul service start` with the swarm's settings: loopback only, nothing that reaches past it.
    static let serviceOptions = ["--no-config", "--interface", "127.0.0.1", "--bt-listen-port", "0", "--no-dht",
                                 "--no-pex", "--no-lpd", "--no-port-mapping"]

    @Test("haul add of a magnet and of a .torrent: the service downloads both, byte-identical, and lists them done")
    func addMagnetAndTorrent() async throws {
        let swarm = try Swarm()
        defer { swarm.stop() }
        let source = swarm.directory.file("seed")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        let film = randomBytes(1_200_000, seed: 41), album = randomBytes(900_001, seed: 42)
        try film.write(to: URL(fileURLWithPath: source + "/film.bin"))
        try album.write(to: URL(fileURLWithPath: source + "/album.bin"))
        let filmTorrent = try await swarm.makeTorrent(of: source + "/film.bin", named: "film.torrent")
        let albumTorrent = try await swarm.makeTorrent(of: source + "/album.bin", named: "album.torrent")
        let filmHash = try Swarm.infoHash(of: filmTorrent), albumHash = try Swarm.infoHash(of: albumTorrent)
        try await swarm.startTracker(serving: [filmHash, albumHash])
        try swarm.seed(filmTorrent, from: source)
        try swarm.seedWithTransmission(albumTorrent, from: source)
        try await swarm.waitForSeeders(filmHash)
        try await swarm.waitForSeeders(albumHash)

        let home = ServiceHome()
        let start = try await HaulProcess.run(["service", "start"] + Self.serviceOptions, in: swarm.directory.path,
                                              environment: home.environment, limit: torrentLimit)
        #expect(start.status == 0, "\(start)")
        let out = swarm.directory.file("out")
        let tracker = swarm.announce.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let magnet = "magnet:?xt=urn:btih:\(filmHash)&dn=film.bin&tr=\(tracker)"
        let added = try await HaulProcess.run(["add", "--no-config", "--seed-time", "0", "-o", out, magnet, albumTorrent],
                                              in: swarm.directory.path, environment: home.environment, limit: torrentLimit)
        #expect(added.status == 0, "\(added)")
        try await Self.waitForDone(2, home)
        #expect(FileManager.default.contents(atPath: out + "/film.bin") == film)
        #expect(FileManager.default.contents(atPath: out + "/album.bin") == album)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted() == ["album.bin", "film.bin"])
        let list = try await HaulProcess.run(["ls", "--json", "--no-config"], in: swarm.directory.path,
                                             environment: home.environment, limit: torrentLimit)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        #expect(Set(rows.compactMap { $0["file"] as? String }) == [out + "/film.bin", out + "/album.bin"], "\(list.stdout)")
        #expect(rows.allSatisfy { $0["state"] as? String == "done" }, "\(list.stdout)")
    }

    @Test("aria2's addUri with a magnet and addTorrent with select-file and dir: both done, as tellStatus says")
    func aria2Face() async throws {
        let swarm = try Swarm()
        defer { swarm.stop() }
        let folder = swarm.directory.file("seed/pack")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let one = randomBytes(600_000, seed: 51), two = randomBytes(700_000, seed: 52), film = randomBytes(800_000, seed: 53)
        try one.write(to: URL(fileURLWithPath: folder + "/one.bin"))
        try two.write(to: URL(fileURLWithPath: folder + "/two.bin"))
        try film.write(to: URL(fileURLWithPath: swarm.directory.file("seed/film.bin")))
        let pack = try await swarm.makeTorrent(of: folder, named: "pack.torrent", pieceKiB: 16)
        let filmTorrent = try await swarm.makeTorrent(of: swarm.directory.file("seed/film.bin"), named: "film.torrent")
        let packHash = try Swarm.infoHash(of: pack), filmHash = try Swarm.infoHash(of: filmTorrent)
        try await swarm.startTracker(serving: [packHash, filmHash])
        try swarm.seed(pack, from: swarm.directory.file("seed"))
        try swarm.seed(filmTorrent, from: swarm.directory.file("seed"))
        try await swarm.waitForSeeders(packHash)
        try await swarm.waitForSeeders(filmHash)
        let order = try TorrentMetadata.parse(torrent: Array(try #require(FileManager.default.contents(atPath: pack))))
            .files.filter { $0.kind == .regular }.map(\.path)
        let chosen = try #require(order.firstIndex(of: "pack/two.bin")) + 1

        let home = ServiceHome()
        let downloads = swarm.directory.file("dl")
        let other = swarm.directory.file("other")
        for folder in [downloads, other] { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
        let start = try await HaulProcess.run(["service", "start", "--json", "--rpc-listen", "127.0.0.1:0", "--output-dir", downloads,
                                               "--rpc-allowed-dir", downloads, "--rpc-allowed-dir", other, "--idle-exit", "300"]
                                              + Self.serviceOptions,
                                              in: swarm.directory.path, environment: home.environment, limit: torrentLimit)
        #expect(start.status == 0, "\(start)")
        let status = try #require(try JSONSerialization.jsonObject(with: Data(start.stdout.utf8)) as? [String: Any])
        let rpc = try #require(status["rpc"] as? [String: Any], "\(start.stdout)")
        let url = try #require(rpc["url"] as? String)
        let secret = try String(contentsOfFile: try #require(rpc["secretFile"] as? String), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        func call(_ method: String, _ params: [Any]) async throws -> [String: Any] {
            let document: [String: Any] = ["jsonrpc": "2.0", "id": "q", "method": method, "params": ["token:" + secret] + params]
            let body = swarm.directory.file("call-\(UUID().uuidString)")
            try JSONSerialization.data(withJSONObject: document).write(to: URL(fileURLWithPath: body))
            let answer = try await toolOutput(["/usr/bin/curl", "-s", "--data-binary", "@" + body, url])
            return try #require(try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any], "\(answer)")
        }
        let tracker = swarm.announce.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let magnet = "magnet:?xt=urn:btih:\(filmHash)&tr=\(tracker)"
        let byMagnet = try await call("aria2.addUri", [[magnet], ["seed-time": "0"]])
        let magnetGID = try #require(byMagnet["result"] as? String, "\(byMagnet)")
        let metainfo = try #require(FileManager.default.contents(atPath: pack)).base64EncodedString()
        let byTorrent = try await call("aria2.addTorrent", [metainfo, [], ["select-file": "\(chosen)", "dir": other,
                                                                          "seed-time": "0"]])
        let torrentGID = try #require(byTorrent["result"] as? String, "\(byTorrent)")
        try await Self.waitForDone(2, home)
        #expect(FileManager.default.contents(atPath: downloads + "/film.bin") == film)
        #expect(FileManager.default.contents(atPath: other + "/pack/two.bin") == two)
        #expect(!FileManager.default.fileExists(atPath: other + "/pack/one.bin"))
        for gid in [magnetGID, torrentGID] {
            let told = try await call("aria2.tellStatus", [gid, ["status", "gid"]])
            #expect((told["result"] as? [String: Any])?["status"] as? String == "complete", "\(told)")
        }
        let bad = try await call("aria2.addTorrent", [Data("d4:infod6:lengthi1e".utf8).base64EncodedString()])
        #expect((bad["error"] as? [String: Any])?["message"] as? String != nil, "\(bad)")
        _ = try await HaulProcess.run(["service", "stop"], in: swarm.directory.path, environment: home.environment,
                                      limit: torrentLimit)
    }

    @Test("kill -9 of the service and a new one: the torrent goes on from its verified pieces",
          .disabled("passes alone (5 of 5 runs), but in the whole suite on two cores no checkpoint was renamed in 60 s after the 2 MiB mark, and a pause sent then never took: to be found before issue 76 is done"))
    func killAndRestart() async throws {
        let swarm = try Swarm()
        defer { swarm.stop() }
        let source = swarm.directory.file("seed")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        // Long enough at 1 MiB/s that checkpoints (every 5 s) come after the 2 MiB mark, also in a loaded run.
        let size = 16 << 20
        let data = randomBytes(size, seed: 61)
        try data.write(to: URL(fileURLWithPath: source + "/big.bin"))
        let torrent = try await swarm.makeTorrent(of: source + "/big.bin", named: "big.torrent")
        let hash = try Swarm.infoHash(of: torrent)
        try await swarm.startTracker(serving: [hash])
        try swarm.seed(torrent, from: source, uploadLimit: "1M")
        try await swarm.waitForSeeders(hash)

        let home = ServiceHome()
        @Sendable func haul(_ arguments: [String]) async throws -> HaulProcess.Exit {
            try await HaulProcess.run(arguments, in: swarm.directory.path, environment: home.environment, limit: torrentLimit)
        }
        #expect(try await haul(["service", "start"] + Self.serviceOptions).status == 0)
        let out = swarm.directory.file("out")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let added = try await haul(["add", "--no-config", "--seed-time", "0", "-o", out, torrent])
        #expect(added.status == 0, "\(added)")
        try await Self.waitFor("2 MiB verified", home) { $0.completed >= 2 << 20 }
        // A checkpoint after that, then the service killed outright.
        let resume = "haul-\(hash).part.resume"
        try await waitForRename(into: out, named: resume)
        let status = try await haul(["service", "status", "--json"])
        let pid = try #require((try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["pid"] as? Int)
        kill(pid_t(pid), SIGKILL)

        #expect(try await haul(["service", "start"] + Self.serviceOptions).status == 0)
        let first = try await Self.firstProgress(home)
        #expect(first >= 2 << 20, "the new service started from \(first) verified bytes")
        try await Self.waitForDone(1, home)
        #expect(FileManager.default.contents(atPath: out + "/big.bin") == data)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out) == ["big.bin"])
    }

    /// Waits (on the service's events) until the one download's state and verified bytes satisfy `condition`;
    /// `action` runs once the events are live (a change it makes is then seen, not folded into the snapshot).
    static func waitFor(_ what: String, _ home: ServiceHome, after action: (@Sendable () async throws -> Void)? = nil,
                        _ condition: @escaping @Sendable ((state: DownloadState, completed: Int64)) -> Bool) async throws {
        let client = ServiceClient(directory: StateDirectory(path: home.path))
        try await within(.seconds(60), what) {
            var seen: (state: DownloadState, completed: Int64) = (.queued, 0)
            for await part in client.events() {
                if case .live = part, let action { try await action() }
                guard case .events(let events) = part else { continue }
                for event in events {
                    switch event {
                    case .state(_, let state): seen.state = state
                    case .progress(_, let progress): seen.completed = progress.completed
                    default: continue
                    }
                    if condition(seen) { return }
                }
            }
        }
    }

    /// The verified bytes of the first progress a (new) service's download reports, live: the snapshot before it
    /// holds what the store kept of the last service's.
    static func firstProgress(_ home: ServiceHome) async throws -> Int64 {
        let client = ServiceClient(directory: StateDirectory(path: home.path))
        return try await within(.seconds(60), "the first progress") {
            var live = false
            for await part in client.events() {
                switch part {
                case .live: live = true
                case .events(let events) where live:
                    for case .progress(_, let progress) in events where progress.completed > 0 { return progress.completed }
                default: continue
                }
            }
            return -1
        }
    }

    /// Waits (on the service's events) until `count` downloads are done; a failed one fails the test.
    static func waitForDone(_ count: Int, _ home: ServiceHome) async throws {
        let client = ServiceClient(directory: StateDirectory(path: home.path))
        try await within(.seconds(60), "\(count) torrents done") {
            var states: [DownloadID: DownloadState] = [:]
            for await part in client.events() {
                guard case .events(let events) = part else { continue }
                for case .state(let id, let state) in events {
                    states[id] = state
                    if case .failed(let error) = state { Issue.record("download \(id) failed: \(error.message)") }
                }
                if states.values.filter({ $0 == .done }).count >= count { return }
                if states.values.contains(where: { if case .failed = $0 { true } else { false } }) { return }
            }
        }
    }
}
