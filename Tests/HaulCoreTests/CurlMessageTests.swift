import CCurl
import Foundation
import TestSupport
import Testing
@testable import HaulCore

@Suite struct CurlMessageTests {
    @Test(arguments: [
        ("SSL certificate problem: unable to get local issuer certificate",
         "SSL certificate problem: unable to get local issuer certificate"),
        ("URL using bad/illegal format or missing URL", "URL using bad/illegal format or missing URL"),
        ("HTTP/2 stream 1 was not closed cleanly", "HTTP/2 stream 1 was not closed cleanly"),
        ("Could not resolve host: nowhere", "could not resolve host: nowhere"),
        ("Failed to connect to 127.0.0.1 port 1", "failed to connect to 127.0.0.1 port 1"),
        ("A b", "a b"),
        ("É", "é"),
    ])
    func theFirstLetterIsLoweredUnlessTheFirstWordIsAnAcronym(detail: String, message: String) {
        #expect(HaulError(curlCode: CURLE_COULDNT_CONNECT, detail: detail).message == message)
    }

    @Test func curlsOwnTextKeepsItsAcronymToo() {
        #expect(HaulError(curlCode: CURLE_URL_MALFORMAT, detail: "").message.hasPrefix("URL "))
    }
}
