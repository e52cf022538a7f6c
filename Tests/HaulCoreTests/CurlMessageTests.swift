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
        // A name with capitals inside it keeps its first one too (TLS libraries name themselves first).
        ("OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number",
         "OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number"),
        ("GnuTLS recv error (-110): The TLS connection was non-properly terminated.",
         "GnuTLS recv error (-110): The TLS connection was non-properly terminated."),
        ("Received HTTP/0.9 when not allowed", "received HTTP/0.9 when not allowed"),
        ("A b", "a b"),
        ("É", "é"),
    ])
    func theFirstLetterIsLoweredUnlessTheFirstWordIsAnAcronymOrAName(detail: String, message: String) {
        #expect(HaulError(curlCode: CURLE_COULDNT_CONNECT, detail: detail).message == message)
    }

    @Test func curlsOwnTextKeepsItsAcronymToo() {
        #expect(HaulError(curlCode: CURLE_URL_MALFORMAT, detail: "").message.hasPrefix("URL "))
    }

    /// haul checks the URLs it is given before any request, so libcurl's refusals of a scheme or a URL come
    /// from the server (a redirect to `file:`, an answer that is not HTTP): protocol errors, exit 7. So is an
    /// answer libcurl cannot read, which it reports as a failed receive.
    @Test func whatTheServerSentIsAProtocolError() {
        #expect(HaulError(curlCode: CURLE_UNSUPPORTED_PROTOCOL, detail: "Received HTTP/0.9 when not allowed").category
                == .protocol)
        #expect(HaulError(curlCode: CURLE_UNSUPPORTED_PROTOCOL, detail: "Protocol \"file\" not supported").category
                == .protocol)
        #expect(HaulError(curlCode: CURLE_URL_MALFORMAT, detail: "").category == .protocol)
        #expect(HaulError(curlCode: CURLE_RECV_ERROR,
                          detail: "Illegal or missing hexadecimal sequence in chunked-encoding").category == .protocol)
        #expect(HaulError(curlCode: CURLE_RECV_ERROR, detail: "Too large response headers: 308163 > 307200").category
                == .protocol)
        #expect(HaulError(curlCode: CURLE_RECV_ERROR, detail: "Recv failure: Connection reset by peer").category
                == .network)
        // A header line past libcurl's cap, which it reports as out of memory (`WrongRangeTests` has the answers).
        for (code, detail) in [(CURLE_OUT_OF_MEMORY, ""), (CURLE_RECV_ERROR, "Out of memory in chunked-encoding")] {
            let error = HaulError(curlCode: code, detail: detail)
            #expect(error.category == .protocol, "\(detail)")
            #expect(error.message.hasPrefix("the answer has a header line too long to read"), "\(error)")
        }
    }
}
