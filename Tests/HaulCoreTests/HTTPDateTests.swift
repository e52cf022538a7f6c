import Foundation
import TestSupport
import Testing
@testable import HaulCore

/// `HTTPDate.parse` reads the IMF-fixdate by hand and leaves every other form to `curl_getdate`: the two
/// readers must agree on every date, and the hand-made one must step aside for anything it does not know.
@Suite struct HTTPDateTests {
    @Test func theHandReaderAgreesWithCurlOnEveryFixdate() {
        var random = SplitMix64(seed: 0x9E37_79B9_7F4A_7C15)
        var samples: [Int64] = [0, 59, 86_399, 86_400, 784_111_777, 951_782_400, 951_868_799, 1_709_251_199,
                                2_147_483_647, 2_147_483_648, 4_107_542_399, 253_402_300_799]
        // Seconds up to the year 9999.
        for _ in 0..<5000 { samples.append(Int64(random.next() % 253_402_300_800)) }
        for seconds in samples {
            let text = HTTPDate.format(Date(timeIntervalSince1970: Double(seconds)))
            #expect(HTTPDate.fixdate(text) == seconds, "\(text)")
            #expect(HTTPDate.curlDate(text) == seconds, "\(text)")
        }
    }

    @Test func anythingButAPlainFixdateIsLeftToCurl() {
        for text in ["Sun, 31 Feb 1994 08:49:37 GMT",  // a day February lacks
                     "Tue, 29 Feb 2100 00:00:00 GMT",  // not a leap year
                     "Sun, 06 Nov 1994 08:49:60 GMT",  // a leap second
                     "Sun, 06 Nov 1994 24:00:00 GMT",
                     "sun, 06 Nov 1994 08:49:37 GMT",  // curl's, case-insensitive
                     "Sun, 06 nov 1994 08:49:37 GMT",
                     "Xyz, 06 Nov 1994 08:49:37 GMT",
                     "Sun, 06 Nov 1994 08:49:37 UTC",
                     "Sun, 6 Nov 1994 08:49:37 GMT",
                     "Sunday, 06-Nov-94 08:49:37 GMT",  // RFC 850
                     "Sun Nov  6 08:49:37 1994",  // asctime
                     "Sun, 06 Nov 1969 08:49:37 GMT",
                     "Sun, 0a Nov 1994 08:49:37 GMT",
                     "Sun, 06 Nov 1994 08:49:37 GMT ",
                     ""] {
            #expect(HTTPDate.fixdate(text) == nil, "\(text)")
            #expect(HTTPDate.parse(text).map { Int64($0.timeIntervalSince1970) } == HTTPDate.curlDate(text), "\(text)")
        }
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT")?.timeIntervalSince1970 == 784_111_777)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994")?.timeIntervalSince1970 == 784_111_777)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT")?.timeIntervalSince1970 == 784_111_777)
    }
}
