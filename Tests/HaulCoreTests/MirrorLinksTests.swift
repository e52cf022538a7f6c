import Foundation
import HaulCore
import Testing

/// RFC 6249's `Link: rel=duplicate` and RFC 3230's `Digest` headers, as a MirrorBrain server sends them.
@Suite struct MirrorLinksTests {
    @Test func duplicatesBecomeSourcesByPriority() {
        let headers = [
            "Date: Mon, 07 Dec 2026 12:00:00 GMT",
            "Link: <http://127.0.0.1:8081/a.iso>; rel=duplicate; pri=2; geo=de",
            "link: <http://127.0.0.1:8082/a.iso>; rel=\"duplicate\"; pri=1; geo=FR, <rsync://127.0.0.1/a.iso>; rel=duplicate; pri=1",
            "Link: <http://127.0.0.1:8080/a.iso.meta4>; rel=describedby; type=\"application/metalink4+xml\"",
            "Link: <http://127.0.0.1:8083/a,b.iso>; rel=\"duplicate x\"",
            "Digest: MD5=ZajifYh5KDgxtmS9i38K1A==, SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
        ]
        let (sources, checksum) = MirrorLinks.read(headers: headers)
        #expect(sources == [
            DownloadSource(url: "http://127.0.0.1:8082/a.iso", priority: 1, location: "fr"),
            DownloadSource(url: "http://127.0.0.1:8081/a.iso", priority: 2, location: "de"),
            DownloadSource(url: "http://127.0.0.1:8083/a,b.iso", priority: nil, location: nil),
        ])
        #expect(checksum == Checksum(algorithm: .sha256, hex: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"))
    }

    @Test func digestNamesAndBadValues() {
        #expect(MirrorLinks.checksum(digest: ["SHA=2jmj7l5rSw0yVb/vlWAYkK/YBwk="])
                == Checksum(algorithm: .sha1, hex: "da39a3ee5e6b4b0d3255bfef95601890afd80709"))
        #expect(MirrorLinks.checksum(digest: ["SHA-256=notbase64!", "UNIXsum=30637"]) == nil)
        // Decodes, but to the wrong length for its algorithm.
        #expect(MirrorLinks.checksum(digest: ["SHA-256=2jmj7l5rSw0yVb/vlWAYkK/YBwk="]) == nil)
        #expect(MirrorLinks.sources(link: ["<http://a/>; rel=duplicate; pri=0", "garbage", "<http://b/"]).map(\.priority) == [nil])
    }
}
