import Foundation
import TestSupport
import Testing
@testable import HaulCore

@Suite struct RateLimitRangeTests {
    @Test(arguments: ["1e300G", "99999999999999999999K", "99999999999999999999", "-5K", "-0", "0", "nan", "inf",
                      "-inf", "NaNK", "infM", "1e-300", "0.4", "", "K", " ", "8E", "1e19", "0x10"])
    func refused(text: String) {
        #expect(RateLimit.parse(text) == nil)
    }

    @Test func theLargestAcceptedRateIsOneTebibytePerSecond() {
        #expect(RateLimit.parse("1024G") == 1 << 40)
        #expect(RateLimit.parse("1025G") == nil)
        #expect(RateLimit.parse("1") == 1)
    }
}
