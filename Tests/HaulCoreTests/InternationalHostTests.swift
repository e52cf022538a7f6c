import Foundation
import TestSupport
import Testing
@testable import HaulCore

@Suite struct InternationalHostTests {
    @Test(arguments: ["http://bücher.localhost:8080/f", "https://例え.テスト/x", "http://xn--bcher-kva.example/",
                      "http://ÜBER.example/a?b=ä#c"])
    func accepted(url: String) {
        #expect(URLCheck.problem(with: url) == nil)
    }

    @Test(arguments: [
        ("http://bü cher.localhost/", "URL contains spaces or control characters"),
        ("http://bü\u{1b}cher/", "URL contains spaces or control characters"),
        ("http:///nohost", "URL has no host"),
        ("gopher://bücher.example/", "unsupported URL scheme \"gopher\""),
        ("http://bü<cher>.example/", "not a valid URL"),
        ("http://[::1/", "not a valid URL"),
    ])
    func refused(url: String, reason: String) {
        #expect(URLCheck.problem(with: url) == reason)
    }
}
