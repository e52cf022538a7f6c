import Foundation
import HaulCore
import HaulTorrent
import Testing
import TestSupport

/// Torrents whose names try to leave the output directory, repeat or collide.
@Suite("Hostile torrents")
struct HostileTorrentTests {
    @Test("the layout keeps every file under the folder: .., absolute paths, duplicates, a file named like a folder")
    func layout() {
        let files = [
            TorrentFile(index: 0, path: "t/../../escape.bin", size: 10, kind: .regular),
            TorrentFile(index: 1, path: "t//etc/passwd", size: 1, kind: .regular),
            TorrentFile(index: 2, path: "t/dup.bin", size: 1, kind: .regular),
            TorrentFile(index: 3, path: "t/dup.bin", size: 1, kind: .regular),
            TorrentFile(index: 4, path: "t/d", size: 1, kind: .regular),
            TorrentFile(index: 5, path: "t/d/x.bin", size: 1, kind: .regular),
            TorrentFile(index: 6, path: "t/.pad/7", size: 3, kind: .pad),
            TorrentFile(index: 7, path: "t/x.part", size: 1, kind: .regular),
            TorrentFile(index: 8, path: "t/" + String(repeating: "n", count: 300) + ".txt", size: 1, kind: .regular),
            TorrentFile(index: 9, path: "t/../.hidden", size: 1, kind: .regular),
        ]
        let layout = TorrentLayout(files: files, name: "../../evil", selection: nil)
        #expect(layout.name == "evil")
        let paths = layout.entries.map(\.finalPath)
        #expect(Set(paths).count == paths.count)
        for path in paths {
            #expect(path.hasPrefix("evil/"), "\(path)")
            #expect(!path.split(separator: "/").contains(where: { $0 == ".." || $0 == "." || $0.isEmpty }), "\(path)")
            #expect(path.split(separator: "/").allSatisfy { $0.utf8.count <= 224 }, "\(path)")
        }
        #expect(layout.entries.count == 9)
        #expect(paths.contains("evil/escape.bin") && paths.contains("evil/etc/passwd") && paths.contains("evil/hidden"))
        #expect(paths.contains("evil/dup.bin") && paths.contains("evil/dup.1.bin"))
        // The file `d` and the folder `d` of `d/x.bin` cannot share a name.
        let d = paths.filter { $0.hasPrefix("evil/d") && !$0.hasPrefix("evil/dup") }
        #expect(d.count == 2 && !d.contains { other in d.contains { $0 != other && $0.hasPrefix(other + "/") } }, "\(d)")
        #expect(paths.contains("evil/x_part"))
        #expect(layout.entries.allSatisfy { $0.partPath == $0.finalPath + ".part" })
    }

    @Test("a name on disk already is not taken: the file gets a number")
    func takenOnDisk() {
        let files = [TorrentFile(index: 0, path: "film.mkv", size: 10, kind: .regular)]
        let layout = TorrentLayout(files: files, name: "film.mkv", selection: nil) { $0 == "film.mkv" }
        #expect(layout.entries.map(\.finalPath) == ["film.1.mkv"])
        #expect(layout.name == "film.1.mkv")
    }

    @Test("--select-file's syntax is aria2's, from 1")
    func selection() throws {
        let selection = try FileSelection.parse("1,3-5").get()
        #expect([1, 3, 4, 5].allSatisfy(selection.contains) && !selection.contains(2) && !selection.contains(6))
        for bad in ["", "0", "3-1", "a", "1,,2", "-2"] {
            #expect(throws: HaulError.self) { try FileSelection.parse(bad).get() }
        }
    }

    @Test("magnets: hex and base32 btih, v2 btmh; bad ones refused")
    func magnets() throws {
        let hex = try TorrentMetadata.parse(magnet: "magnet:?xt=urn:btih:0123456789abcdef0123456789abcdef01234567&dn=x")
        #expect(hex.infoHashes.v1 == "0123456789abcdef0123456789abcdef01234567" && hex.name == "x" && !hex.hasMetadata)
        let base32 = try TorrentMetadata.parse(magnet: "magnet:?xt=urn:btih:AERUKZ4JVPG66AJDIVTYTK6N54ASGRLH")
        #expect(base32.infoHashes.v1 == "0123456789abcdef0123456789abcdef01234567")
        let v2 = "1220" + String(repeating: "ab", count: 32)
        let hybrid = try TorrentMetadata.parse(magnet: "magnet:?xt=urn:btmh:\(v2)")
        #expect(hybrid.infoHashes.v2 == String(repeating: "ab", count: 32))
        #expect(throws: HaulError.self) { try TorrentMetadata.parse(magnet: "magnet:?dn=nohash") }
    }

    @Test("a hostile torrent downloaded from a peer: every file under the folder, the data intact")
    func hostileDownload() async throws {
        let swarm = try Swarm()
        defer { swarm.stop() }
        let data = randomBytes(40_000, seed: 9)
        let pieceLength = 16384
        let torrent = swarm.directory.file("hostile.torrent")
        try Data(Bencode.torrent(name: "../../evil", pieceLength: pieceLength, announce: swarm.announce, files: [
            (["..", "..", "escape.bin"], data), (["dup.bin"], Data()), (["dup.bin"], Data()), (["d"], Data()),
            (["d", "x.bin"], Data()), (["/etc", "passwd"], Data()), (["x.part"], Data()),
            ([String(repeating: "n", count: 300) + ".txt"], Data()),
        ])).write(to: URL(fileURLWithPath: torrent))
        try await swarm.startTracker(serving: [try Swarm.infoHash(of: torrent)])
        // The seeder: libtorrent in this process, each file at a plain name of the test's.
        let seedFolder = swarm.directory.file("seed")
        try FileManager.default.createDirectory(atPath: seedFolder, withIntermediateDirectories: true)
        let metadata = try TorrentMetadata.parse(torrent: Array(try #require(FileManager.default.contents(atPath: torrent))))
        metadata.setSavePath(seedFolder)
        for file in metadata.files {
            metadata.rename(file: file.index, to: "f\(file.index)")
            try (file.size > 0 ? data : Data()).write(to: URL(fileURLWithPath: seedFolder + "/f\(file.index)"))
        }
        let session = try TorrentSession(.loopback)
        _ = try session.add(metadata)
        try await swarm.waitForSeeders(try Swarm.infoHash(of: torrent))
        let out = swarm.directory.file("out")
        let exit = try await HaulProcess.run(leechOptions + ["-o", out, torrent], in: swarm.directory.path, limit: torrentLimit)
        await session.close()
        #expect(exit.status == 0, "\(exit)")
        let written = try FileManager.default.subpathsOfDirectory(atPath: out)
        let files = written.filter { path in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: out + "/" + path, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
        #expect(files.count == 8, "\(written)")
        #expect(files.allSatisfy { $0.hasPrefix("evil/") && !$0.hasSuffix(".part") }, "\(written)")
        #expect(FileManager.default.contents(atPath: out + "/evil/escape.bin") == data, "\(written)")
        // Nothing beside the output folder but what the test made.
        let around = try FileManager.default.contentsOfDirectory(atPath: swarm.directory.path).sorted()
        #expect(around == ["hostile.torrent", "out", "seed", "whitelist"], "\(around)")
    }
}

/// Just enough bencoding to write a .torrent by hand (hostile names included).
enum Bencode {
    static func torrent(name: String, pieceLength: Int, announce: String, files: [([String], Data)]) -> [UInt8] {
        var all = Data()
        for (_, data) in files { all.append(data) }
        var pieces: [UInt8] = []
        var offset = 0
        while offset < all.count {
            let piece = all[offset..<min(offset + pieceLength, all.count)]
            pieces += hexBytes(OpenSSLDigest.hex(.sha1, of: Data(piece)))
            offset += pieceLength
        }
        let fileList = files.map { path, data in
            dictionary([("length", integer(data.count)), ("path", list(path.map(string)))])
        }
        let info = dictionary([("files", list(fileList)), ("name", string(name)),
                               ("piece length", integer(pieceLength)), ("pieces", bytes(pieces))])
        return dictionary([("announce", string(announce)), ("info", info)])
    }

    static func integer(_ value: Int) -> [UInt8] { Array("i\(value)e".utf8) }
    static func bytes(_ value: [UInt8]) -> [UInt8] { Array("\(value.count):".utf8) + value }
    static func string(_ value: String) -> [UInt8] { bytes(Array(value.utf8)) }
    static func list(_ items: [[UInt8]]) -> [UInt8] { [UInt8(ascii: "l")] + items.flatMap { $0 } + [UInt8(ascii: "e")] }
    /// Keys in the order given: the callers give them sorted, as bencoding requires.
    static func dictionary(_ items: [(String, [UInt8])]) -> [UInt8] {
        [UInt8(ascii: "d")] + items.flatMap { string($0.0) + $0.1 } + [UInt8(ascii: "e")]
    }

    static func hexBytes(_ hex: String) -> [UInt8] {
        var result: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            result.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return result
    }
}

/// A torrent of a million files.
@Suite("A torrent of a million files")
struct MillionFilesTests {
    /// A .torrent of `count` files under `many/`: empty ones, but for `real` (index: bytes), laid out in order.
    static func torrent(count: Int, real: [Int: Data], announce: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count * 40)
        var all = Data()
        out += Bencode.string("announce") + Bencode.string(announce) + Bencode.string("info")
        out += Array("d".utf8) + Bencode.string("files") + Array("l".utf8)
        for index in 0..<count {
            let size = real[index]?.count ?? 0
            if let data = real[index] { all.append(data) }
            out += Array("d6:lengthi\(size)e4:pathl".utf8) + Bencode.string("f\(index)") + Array("ee".utf8)
        }
        out += Array("e".utf8)
        var pieces: [UInt8] = []
        var offset = 0
        while offset < all.count {
            pieces += Bencode.hexBytes(OpenSSLDigest.hex(.sha1, of: Data(all[offset..<min(offset + 16384, all.count)])))
            offset += 16384
        }
        out += Bencode.string("name") + Bencode.string("many") + Bencode.string("piece length") + Bencode.integer(16384)
        out += Bencode.string("pieces") + Bencode.bytes(pieces) + Array("e".utf8)
        return Array("d".utf8) + out + Array("e".utf8)
    }

    @Test("10^6 files: parsed and laid out, every name its own under the folder")
    func layout() throws {
        let count = 1_000_000
        let bytes = Self.torrent(count: count, real: [2: Data(repeating: 1, count: 1000)], announce: "http://127.0.0.1:1/announce")
        let metadata = try TorrentMetadata.parse(torrent: bytes)
        #expect(metadata.files.count == count)
        let selection = try FileSelection.parse("3,1000000").get()
        let layout = TorrentLayout(files: metadata.files, name: metadata.name, selection: selection)
        #expect(layout.entries.count == count)
        #expect(layout.entries.filter(\.selected).map(\.index) == [2, 999_999])
        #expect(layout.selectedBytes == 1000)
        #expect(Set(layout.entries.map(\.finalPath)).count == count)
        #expect(layout.entries.allSatisfy { $0.finalPath.hasPrefix("many/") })
    }

    @Test("10^6 files and --select-file: haul starts on the chosen ones and writes nothing else")
    func selectedRun() async throws {
        let directory = TempDirectory()
        defer { directory.remove() }
        let real = [2: randomBytes(40_000, seed: 31), 999_999: randomBytes(30_000, seed: 32)]
        let bytes = Self.torrent(count: 1_000_000, real: real, announce: "http://127.0.0.1:1/announce")
        try Data(bytes).write(to: URL(fileURLWithPath: directory.file("many.torrent")))
        let haul = try HaulProcess(leechOptions + ["--json", "--select-file", "3,1000000", "-o", "out", "many.torrent"],
                                   in: directory.path)
        let watchdog = haul.killed(after: torrentLimit)
        defer { watchdog.cancel() }
        let started = await haul.firstLine { TorrentResumeTests.event($0)?["event"] as? String == "started" }
        let event = try #require(started.flatMap(TorrentResumeTests.event))
        #expect(event["total"] as? Int == 70_000)
        haul.send(SIGINT)
        let exit = await haul.wait(limit: torrentLimit)
        #expect(exit.status == 130, "\(exit)")
        let written = try FileManager.default.subpathsOfDirectory(atPath: directory.file("out"))
        #expect(written.count <= 4, "\(written.prefix(10))")
        #expect(written.allSatisfy { $0 == "many" || $0.hasPrefix("many/f2") || $0.hasPrefix("many/f999999") || $0.hasPrefix("haul-") },
                "\(written.prefix(10))")
    }
}
