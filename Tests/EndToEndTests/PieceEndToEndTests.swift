import Foundation
import Testing
import TestSupport
@testable import HaulCore

/// A metalink's `<pieces>` checked on the finished part, against Debian's nginx on loopback: one source serves
/// the file, the other a file of the same size with one piece corrupted. A bad piece is fetched again from the
/// good source and the bad one dropped; with only the bad one, the download fails with exit 9.
@Suite(.serialized) struct PieceEndToEndTests {
    static let pieceLength: Int64 = 256 << 10
    static let size = 2 << 20
    static let badPiece = 5

    static let good: Data = {
        var data = Data(count: size)
        data.withUnsafeMutableBytes { raw in
            var state: UInt64 = 0x2545_F491_4F6C_DD1D
            for index in 0..<raw.count {
                state ^= state << 13; state ^= state >> 7; state ^= state << 17
                raw[index] = UInt8(truncatingIfNeeded: state)
            }
        }
        return data
    }()

    /// The same size, a few bytes inside `badPiece` changed.
    static let bad: Data = {
        var data = good
        let start = badPiece * Int(pieceLength) + 1000
        for index in start..<(start + 16) { data[index] ^= 0xFF }
        return data
    }()

    static let pieces: PieceHashes = {
        let hashes = stride(from: 0, to: size, by: Int(pieceLength)).map { start -> String in
            let context = DigestContext(.sha256)!
            good[start..<min(size, start + Int(pieceLength))].withUnsafeBytes { context.update($0) }
            return context.hex()!
        }
        return PieceHashes(algorithm: .sha256, length: pieceLength, hashes: hashes)
    }()

    /// An nginx with the good file at block 0's root and the corrupted one at block 1's.
    static func nginx() async throws -> MirrorNginx {
        try await MirrorNginx.start(blocks: ["", "root OTHER;"]) { root, other in
            try good.write(to: URL(fileURLWithPath: root + "/file.bin"))
            try bad.write(to: URL(fileURLWithPath: other + "/file.bin"))
        }
    }

    /// The corrupted source first, over one connection: it sends every byte, the piece check finds piece 5 bad,
    /// the piece comes again from the good source, and the bad one is dropped and named.
    @Test func aBadPieceIsFetchedAgainFromAnotherSourceAndItsSenderDropped() async throws {
        let nginx = try await Self.nginx()
        defer { nginx.stop() }
        let dir = TempDirectory()
        let urls = [nginx.url(1, "file.bin"), nginx.url(0, "file.bin")]
        var job = MirrorEndToEndTests.job(urls, into: dir, segments: 1, retries: 0)
        job.pieces = Self.pieces
        let (result, facts, statuses) = await MirrorEndToEndTests.run(job)
        #expect(throws: Never.self) { try result.get() }
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("file.bin"))) == Self.good)
        #expect(facts.contains(.pieceRefetched(index: Self.badPiece, url: urls[0], from: urls[1])), "\(facts)")
        #expect(facts.filter { $0.kind == "piece-refetched" }.count == 1, "\(facts)")
        #expect(statuses.first?.state == .dropped, "\(statuses)")
    }

    /// `haul FILE.meta4` whose only source serves the corrupted file: exit 9, one line naming the piece and the
    /// source, and the file takes no name.
    @Test func aBadPieceWithNoOtherSourceFailsWithExit9() async throws {
        let nginx = try await Self.nginx()
        defer { nginx.stop() }
        let dir = TempDirectory()
        let url = nginx.url(1, "file.bin")
        let hashes = Self.pieces.hashes.map { "      <hash>\($0)</hash>\n" }.joined()
        try """
            <?xml version="1.0" encoding="UTF-8"?>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">
              <file name="file.bin">
                <size>\(Self.size)</size>
                <pieces length="\(Self.pieceLength)" type="sha-256">
            \(hashes)    </pieces>
                <url priority="1">\(url)</url>
              </file>
            </metalink>

            """.write(toFile: dir.file("bad.meta4"), atomically: true, encoding: .utf8)
        let run = try await HaulProcess.run(["--no-config", "--plain", "-q", "-o", "out", "bad.meta4"], in: dir.path)
        #expect(run.status == 9, "\(run.stderr)")
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("piece \(Self.badPiece)") && lines[0].contains(url), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("out/file.bin")))
    }
}
