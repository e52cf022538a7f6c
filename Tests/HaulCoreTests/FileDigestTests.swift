import Foundation
import TestSupport
import Testing
@testable import HaulCore

/// `--checksum` and `haul verify` against the published test vectors (FIPS 180, RFC 1321), so that each
/// algorithm's name is tied to the right digest whichever library computes it.
@Suite struct FileDigestTests {
    static let vectors: [(FileDigest.Algorithm, empty: String, abc: String)] = [
        (.md5, "d41d8cd98f00b204e9800998ecf8427e", "900150983cd24fb0d6963f7d28e17f72"),
        (.sha1, "da39a3ee5e6b4b0d3255bfef95601890afd80709", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        (.sha256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
         "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (.sha512,
         "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e",
         "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"),
    ]

    @Test(arguments: vectors.indices)
    func eachAlgorithmGivesItsTestVectors(_ index: Int) throws {
        let (algorithm, empty, abc) = Self.vectors[index]
        let directory = TempDirectory()
        let emptyFile = directory.file("empty")
        let abcFile = directory.file("abc")
        try Data().write(to: URL(fileURLWithPath: emptyFile))
        try Data("abc".utf8).write(to: URL(fileURLWithPath: abcFile))
        #expect(try FileDigest.hex(of: emptyFile, algorithm: algorithm) == empty)
        #expect(try FileDigest.hex(of: abcFile, algorithm: algorithm) == abc)

        var running = RunningDigest(algorithm)
        Array("abc".utf8).withUnsafeBytes { raw in
            running.feed(UnsafeRawBufferPointer(rebasing: raw[0..<1]), at: 0)
            running.feed(UnsafeRawBufferPointer(rebasing: raw[1...]), at: 1)
        }
        #expect(running.hex(ofSize: 3) == abc, "fed in pieces")
        #expect(running.hex(ofSize: 3) == abc, "asking twice does not end it")
        #expect(RunningDigest(algorithm).hex(ofSize: 0) == empty)
    }

    /// Past the 1 MiB reads: 3,000,000 times "a", whose SHA-256 coreutils' sha256sum gives.
    @Test func aFileLongerThanOneReadIsDigestedWhole() throws {
        let directory = TempDirectory()
        let path = directory.file("a")
        try Data(repeating: UInt8(ascii: "a"), count: 3_000_000).write(to: URL(fileURLWithPath: path))
        #expect(try FileDigest.hex(of: path, algorithm: .sha256)
                == "2a152c894398719c0570f83fac34ac03a0f6e8e474b995c2403aa5434f7b9dd4")
    }

    @Test func aMissingFileIsAClearError() {
        #expect(throws: HaulError.self) { try FileDigest.hex(of: "/nonexistent/haul-digest", algorithm: .sha256) }
    }
}
