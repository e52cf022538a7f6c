import Foundation
import Testing
import TestSupport

@testable import SampleServer

@Suite("Generated files")
struct GeneratedFileTests {
    @Test func anyRangeMatchesTheWholeStream() {
        let file = GeneratedFile(name: "x.bin", size: 4_096)
        let whole = file.bytes(offset: 0, count: file.size)
        #expect(whole.count == 4_096)
        for (offset, count) in [(0, 1), (1, 7), (3, 8), (7, 9), (8, 8), (13, 1_000), (4_000, 96), (4_090, 100)] {
            let expected = Array(whole[offset..<Swift.min(offset + count, whole.count)])
            #expect(file.bytes(offset: offset, count: count) == expected, "offset \(offset) count \(count)")
        }
    }

    /// The stream is what it has always been (the bytes peers and earlier runs' parts hold): word `i`, little-endian,
    /// is splitmix64's mix of the name's seed and `i`, at every alignment of a range's ends.
    @Test func theStreamIsLittleEndianSplitmixWords() {
        let file = GeneratedFile(name: "medium.bin", size: 1 << 16)
        let seed = StableHash.fnv1a(file.name)
        // Output `i` of a SplitMix64 generator seeded with `seed` is word `i`.
        var words = SplitMix64(seed: seed)
        var reference: [UInt8] = []
        for _ in 0..<file.size / 8 {
            let word = words.next()
            reference += (0..<8).map { UInt8(truncatingIfNeeded: word >> (8 * $0)) }
        }
        #expect(file.bytes(offset: 0, count: file.size) == reference)
        for offset in 0..<17 {
            for count in [0, 1, 5, 8, 9, 23, 4_093] {
                #expect(file.bytes(offset: offset, count: count) == Array(reference[offset..<(offset + count)]),
                        "offset \(offset) count \(count)")
            }
        }
    }

    @Test func namesGiveDifferentContentAndTheSameNameTheSame() {
        let a = GeneratedFile(name: "a.bin", size: 64).bytes(offset: 0, count: 64)
        let b = GeneratedFile(name: "b.bin", size: 64).bytes(offset: 0, count: 64)
        #expect(a != b)
        #expect(a == GeneratedFile(name: "a.bin", size: 999).bytes(offset: 0, count: 64))
        #expect(Set(a).count > 32, "looks random")
    }

    @Test func theStandardSetGoesUpToOneGiB() {
        #expect(GeneratedFile.standardSet.map(\.size).max() == 1 << 30)
        #expect(Set(GeneratedFile.standardSet.map(\.name)).count == GeneratedFile.standardSet.count)
    }
}

@Suite("Token bucket")
struct TokenBucketTests {
    @Test func firstChunkIsFreeThenPacedAtTheRate() {
        var bucket = TokenBucket(rate: 1_000, capacity: 100)
        #expect(bucket.reserve(100, at: 0) == 0)
        #expect(abs(bucket.reserve(100, at: 0) - 0.1) < 1e-9)
        #expect(abs(bucket.reserve(100, at: 0.1) - 0.1) < 1e-9)
    }

    @Test func idleTimeRefillsOnlyUpToCapacity() {
        var bucket = TokenBucket(rate: 1_000, capacity: 100)
        _ = bucket.reserve(100, at: 0)
        #expect(bucket.reserve(100, at: 10) == 0, "refilled")
        #expect(bucket.reserve(100, at: 10) > 0, "but no more than one burst")
    }

    @Test func sendingNBytesTakesAboutNOverRate() {
        var bucket = TokenBucket(rate: 512 * 1_024, capacity: TokenBucket.chunkSize(forRate: 512 * 1_024, maximum: 262_144))
        var now = 0.0
        var sent = 0
        let chunk = TokenBucket.chunkSize(forRate: 512 * 1_024, maximum: 262_144)
        while sent < 256 * 1_024 {
            now += bucket.reserve(chunk, at: now)
            sent += chunk
        }
        #expect(now > 0.4 && now < 0.5)
    }

    @Test func chunksAreAboutATwentiethAndTheBucketHoldsAtLeastThat() {
        #expect(TokenBucket.chunkSize(forRate: 100_000, maximum: 262_144) == 5_000)
        #expect(TokenBucket.chunkSize(forRate: 1_000_000, maximum: 262_144, perSecond: 100) == 10_000)
        #expect(TokenBucket.capacity(forRate: 1_000_000, chunk: 10_000) == 50_000)
        #expect(TokenBucket.capacity(forRate: 1_000_000, chunk: 50_000) == 50_000)
        #expect(TokenBucket.chunkSize(forRate: 100, maximum: 262_144) == 1_024)
        #expect(TokenBucket.chunkSize(forRate: 1 << 30, maximum: 262_144) == 262_144)
    }
}

@Suite("Header values")
struct HeaderValueTests {
    @Test func httpDates() {
        #expect(HTTPDate.imfFixdate(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.imfFixdate(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.imfFixdate(951_782_400) == "Tue, 29 Feb 2000 00:00:00 GMT")
        #expect(HTTPDate.iso8601(1_704_067_200) == "2024-01-01T00:00:00Z")
        #expect(HTTPDate.iso8601(1_709_251_199) == "2024-02-29T23:59:59Z")
    }

    @Test func httpDatesAgreeWithFoundation() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        for seconds in stride(from: -86_400 * 400, to: 4_000_000_000, by: 7_777_777) {
            #expect(HTTPDate.imfFixdate(seconds) == formatter.string(from: Date(timeIntervalSince1970: Double(seconds))))
        }
    }

    @Test func ifRangeMatchesOnlyTheExactStrongValidators() {
        let validators = ServedFile(name: "a", size: 1, modified: 0, content: .generated(GeneratedFile(name: "a", size: 1))).validators(salt: nil)
        #expect(validators.matches(ifRange: validators.etag))
        #expect(validators.matches(ifRange: validators.lastModified))
        #expect(!validators.matches(ifRange: "W/" + validators.etag))
        #expect(!validators.matches(ifRange: "\"other\""))
        #expect(!validators.matches(ifRange: "Fri, 01 Jan 1971 00:00:00 GMT"))
    }

    @Test func saltChangesBothValidators() {
        let file = ServedFile(name: "a", size: 1, modified: 0, content: .generated(GeneratedFile(name: "a", size: 1)))
        let plain = file.validators(salt: nil)
        let salted = file.validators(salt: "v2")
        #expect(plain.etag != salted.etag)
        #expect(plain.lastModified != salted.lastModified)
        #expect(salted == file.validators(salt: "v2"))
        #expect(salted.etag != file.validators(salt: "v3").etag)
    }

    @Test func percentEncodingKeepsOnlyUnreserved() {
        #expect(PercentEncoding.encode("a b/ü~.-_") == "a%20b%2F%C3%BC~.-_")
    }

    @Test func contentDispositionQuotesSafely() {
        #expect(DownloadRoute.contentDisposition(for: "a.bin") == "attachment; filename=\"a.bin\"")
        #expect(
            DownloadRoute.contentDisposition(for: "é\".txt")
                == "attachment; filename=\"__.txt\"; filename*=UTF-8''%C3%A9%22.txt")
    }

    @Test func byteCountsInDecimalUnits() {
        #expect(CatalogRoutes.formatBytes(999) == "999 B")
        #expect(CatalogRoutes.formatBytes(1_500) == "1.50 KB")
        #expect(CatalogRoutes.formatBytes(1_431_655_765) == "1.43 GB")
        #expect(CatalogRoutes.formatBytes(524_288) == "524 KB")
    }

    @Test(arguments: ["", ".hidden", "..", "a/b", "../x", "a\u{0}b", "a\nb", "/etc/passwd"])
    func unsafeRootNamesAreRejected(name: String) {
        #expect(!RootDirectory.isPlainName(name))
    }

    @Test func plainRootNamesAreAccepted() {
        #expect(RootDirectory.isPlainName("notes.txt"))
        #expect(RootDirectory.isPlainName("photo 1 (copy).jpg"))
    }
}
