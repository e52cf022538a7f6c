import Testing
import TestSupport
@testable import HaulCore

@Suite struct ChecksumFileTests {
    static let sha256 = String(repeating: "ab", count: 32)
    static let sha512 = String(repeating: "cd", count: 64)

    @Test func readsTheSha256sumAndBSDForms() throws {
        let text = """
            # made by sha256sum
            \(Self.sha256)  medium.bin
            \(Self.sha256.uppercased()) *dir/binary.iso
            \(Self.sha512)  big.tar
            SHA1 (notes.txt) = \(String(repeating: "e", count: 40))
            MD5 (old.zip) = \(String(repeating: "f", count: 32))
            SHA512 (name with spaces.bin) = \(Self.sha512)

            """
        let digests = try ChecksumFile.parse(text, source: "SUMS").get()
        #expect(digests["medium.bin"] == Checksum(algorithm: .sha256, hex: Self.sha256))
        #expect(digests["binary.iso"] == Checksum(algorithm: .sha256, hex: Self.sha256), "by the last path component, any case")
        #expect(digests["big.tar"] == Checksum(algorithm: .sha512, hex: Self.sha512))
        #expect(digests["notes.txt"]?.algorithm == .sha1)
        #expect(digests["old.zip"]?.algorithm == .md5)
        #expect(digests["name with spaces.bin"]?.algorithm == .sha512)
        #expect(digests.count == 6)
    }

    @Test(arguments: ["abc  short.bin", "\(String(repeating: "g", count: 64))  nothex.bin", "justonefield",
                      "SHA999 (x) = \(String(repeating: "a", count: 64))"])
    func aBadLineIsAUsageErrorNamingIt(line: String) {
        let error = ChecksumFile.parse("\(Self.sha256)  fine.bin\n\(line)\n", source: "SUMS").failure
        #expect(error?.category == .usage)
        #expect(error?.message.hasPrefix("--checksum-file SUMS line 2: ") == true, "\(error?.message ?? "")")
    }

    @Test func aRunningDigestIsTheFilesOnlyWhenFedInOrderFromZero() throws {
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let expected = OpenSSLDigest.hex(.sha512, of: bytes)
        var digest = RunningDigest(.sha512)
        bytes.withUnsafeBytes { raw in
            digest.feed(UnsafeRawBufferPointer(rebasing: raw[0..<100_000]), at: 0)
            digest.feed(UnsafeRawBufferPointer(rebasing: raw[100_000...]), at: 100_000)
        }
        #expect(digest.hex(ofSize: 300_000) == expected)
        #expect(digest.hex(ofSize: 300_001) == nil, "not the whole file")
        var resumed = RunningDigest(.sha256)
        bytes.withUnsafeBytes { resumed.feed(UnsafeRawBufferPointer(rebasing: $0[1000...]), at: 1000) }
        #expect(resumed.hex(ofSize: 300_000) == nil, "a write past the start gives up")
    }

    @Test func sha512ParsesAsAria2SpellsIt() throws {
        #expect(try Checksum.parse("sha-512=" + Self.sha512.uppercased()).get() == Checksum(algorithm: .sha512, hex: Self.sha512))
    }
}
