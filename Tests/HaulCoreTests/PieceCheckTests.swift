import Foundation
import HaulCore
import TestSupport
import Testing

/// `PieceCheck`: the bad pieces of a file on disk against a metalink's piece hashes.
@Suite struct PieceCheckTests {
    static func sha1(_ bytes: ArraySlice<UInt8>) -> String {
        let hasher = OpenSSLDigest(.sha1)
        bytes.withUnsafeBytes { hasher.update($0) }
        return hasher.hex()
    }

    static func hashes(of bytes: [UInt8], length: Int) -> [String] {
        stride(from: 0, to: bytes.count, by: length).map { sha1(bytes[$0..<min(bytes.count, $0 + length)]) }
    }

    @Test func aGoodFileHasNoBadPiece() throws {
        let dir = TempDirectory()
        let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try Data(bytes).write(to: URL(fileURLWithPath: dir.file("f")))
        let pieces = PieceHashes(algorithm: .sha1, length: 4096, hashes: Self.hashes(of: bytes, length: 4096))
        #expect(pieces.hashes.count == 3)
        #expect(try PieceCheck.badPieces(path: dir.file("f"), pieces: pieces) == [])
    }

    /// A changed byte fails its piece alone; a file cut short fails the pieces it cannot hold.
    @Test func damagedAndMissingPiecesAreBad() throws {
        let dir = TempDirectory()
        let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let pieces = PieceHashes(algorithm: .sha1, length: 2048, hashes: Self.hashes(of: bytes, length: 2048))
        var damaged = bytes
        damaged[5000] ^= 0xFF
        try Data(damaged).write(to: URL(fileURLWithPath: dir.file("f")))
        #expect(try PieceCheck.badPieces(path: dir.file("f"), pieces: pieces) == [2])
        try Data(bytes.prefix(5000)).write(to: URL(fileURLWithPath: dir.file("short")))
        #expect(try PieceCheck.badPieces(path: dir.file("short"), pieces: pieces, size: 10_000) == [2, 3, 4])
    }

    /// A piece longer than the 1 MiB buffer is read in several reads and hashed whole.
    @Test func aPieceLargerThanTheBuffer() throws {
        let dir = TempDirectory()
        let bytes = (0..<(3 << 20) + 17).map { UInt8(truncatingIfNeeded: $0 >> 3) }
        try Data(bytes).write(to: URL(fileURLWithPath: dir.file("f")))
        let length = (2 << 20) + 5
        let pieces = PieceHashes(algorithm: .sha1, length: Int64(length), hashes: Self.hashes(of: bytes, length: length))
        #expect(try PieceCheck.badPieces(path: dir.file("f"), pieces: pieces) == [])
        let wrong = PieceHashes(algorithm: .sha1, length: Int64(length), hashes: [pieces.hashes[0], String(repeating: "0", count: 40)])
        #expect(try PieceCheck.badPieces(path: dir.file("f"), pieces: wrong) == [1])
    }

    @Test func aMissingFileIsAFileError() {
        #expect(throws: HaulError.self) {
            try PieceCheck.badPieces(path: "/nonexistent/haul-piece", pieces: PieceHashes(algorithm: .sha1, length: 1, hashes: ["00"]))
        }
    }
}
