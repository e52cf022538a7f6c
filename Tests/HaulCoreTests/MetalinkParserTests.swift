import Foundation
import HaulCore
import TestSupport
import Testing

/// The metalink parser on libxml2 (RFC 5854 and 3.0), on documents shaped like real ones and on hostile ones.
@Suite struct MetalinkParserTests {
    static func fixture(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/Metalink/\(name)").path
    }

    static func parsed(_ text: String) -> Result<Metalink, MetalinkProblem> { Metalink.parse(Array(text.utf8)) }

    static func problem(_ result: Result<Metalink, MetalinkProblem>) -> String? {
        if case .failure(let problem) = result { return problem.message }
        return nil
    }

    /// A distribution's `.meta4` (MirrorBrain's shape): the file, its size, its three hashes with SHA-256 the
    /// strongest, its SHA-1 pieces, its http(s) mirrors with priority and location (the ftp one and the torrent
    /// left out and noted), its signature ignored.
    @Test func aDistributionsMeta4() throws {
        let metalink = try Metalink.read(path: Self.fixture("distribution.meta4")).get()
        #expect(metalink.files.count == 1)
        let file = try #require(metalink.files.first)
        #expect(file.name == "LibreOffice_24.2.7_Linux_x86-64_deb.tar.gz")
        #expect(file.size == 1_048_576)
        #expect(file.hashes.map(\.algorithm) == [.md5, .sha1, .sha256])
        #expect(file.strongestHash == Checksum(algorithm: .sha256,
                                               hex: "4f9b8a6e2d1c0b3a5968778695a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6"))
        #expect(file.pieces?.algorithm == .sha1)
        #expect(file.pieces?.length == 262_144)
        #expect(file.pieces?.hashes.count == 4)
        #expect(file.pieces?.hashes.first == "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567")
        #expect(file.urls.map(\.priority) == [2, 3, 3, 4, 5, nil])
        #expect(file.urls.map(\.location) == ["de", "fr", "de", "us", "se", nil])
        #expect(file.urls[0].url.hasPrefix("http://127.0.0.1:8081/tdf/"))
        #expect(file.urls[2].url.hasPrefix("https://"))
        #expect(metalink.notes.count == 2)
        #expect(metalink.notes.contains { $0.contains("torrent") })
        #expect(metalink.notes.contains { $0.contains("rsync") })
    }

    /// Metalink 3.0: `files/file`, `verification`, `resources`; `preference` 100 is the most preferred, so
    /// it becomes the lowest priority number; a bittorrent resource is left out.
    @Test func aVersion3Metalink() throws {
        let metalink = try Metalink.read(path: Self.fixture("version3.metalink")).get()
        let file = try #require(metalink.files.first)
        #expect(file.name == "tool-1.2.tar.bz2")
        #expect(file.size == 524_288)
        #expect(file.strongestHash?.algorithm == .sha1)
        #expect(file.pieces == PieceHashes(algorithm: .sha1, length: 262_144, hashes: [
            "aa112233445566778899aabbccddeeff00112233", "bb112233445566778899aabbccddeeff00112233",
        ]))
        #expect(file.urls.map(\.url) == ["http://127.0.0.1:8081/tool-1.2.tar.bz2", "http://127.0.0.1:8082/tool-1.2.tar.bz2",
                                         "http://127.0.0.1:8083/tool-1.2.tar.bz2"])
        #expect(file.urls.map(\.priority) == [51, 1, 91])
        #expect(file.urls.map(\.location) == ["us", "jp", nil])
        #expect(metalink.notes.count == 1)
    }

    /// Several files; an element of another namespace (an extension) is skipped with what it holds.
    @Test func aMultiFileMetalink() throws {
        let metalink = try Metalink.read(path: Self.fixture("multi.meta4")).get()
        #expect(metalink.files.map(\.name) == ["disc/one.iso", "two.bin", "../escape.bin", "/etc/absolute.bin",
                                               "sub//empty-part.bin", "dir/../../up.bin", "bell\u{7F}.bin", "rsync-only.bin"])
        #expect(metalink.files[1].strongestHash?.algorithm == .sha512)
        #expect(metalink.files[7].urls.isEmpty)
    }

    /// An external entity naming /etc/passwd is refused at its declaration: nothing of the file is read.
    @Test func anExternalEntityIsRefused() throws {
        let result = Metalink.read(path: Self.fixture("xxe.meta4"))
        let message = try #require(Self.problem(result))
        #expect(message == "line 3: declares the entity 'secret' (entities are refused)")
        #expect(!message.contains("root:"))
    }

    /// "Billion laughs": refused at the first entity declared, long before anything is expanded.
    @Test func billionLaughsIsRefused() throws {
        let message = try #require(Self.problem(Metalink.read(path: Self.fixture("billion-laughs.meta4"))))
        #expect(message == "line 3: declares the entity 'lol' (entities are refused)")
    }

    /// An external DTD is never loaded: an entity it declares stays unknown (were it loaded, the name would hold
    /// its text), and a parameter entity naming one is refused at its declaration.
    @Test func anExternalDTDIsNotLoaded() throws {
        let dir = TempDirectory()
        try "<!ENTITY e \"EXPANDED\">\n".write(toFile: dir.file("x.dtd"), atomically: true, encoding: .utf8)
        let external = Self.parsed("""
            <?xml version="1.0"?>
            <!DOCTYPE metalink SYSTEM "file://\(dir.file("x.dtd"))">
            <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="a&e;"><url>http://a/</url></file></metalink>
            """)
        // The reference to what it would have declared is left out: libxml2 cannot know it (the DTD is unread).
        #expect(try external.get().files[0].name == "a")
        let parameter = Self.problem(Self.parsed("""
            <?xml version="1.0"?>
            <!DOCTYPE metalink [<!ENTITY % p SYSTEM "file://\(dir.file("x.dtd"))"> %p;]>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="a&e;"><url>http://a/</url></file></metalink>
            """))
        #expect(parameter == "line 2: declares the entity 'p' (entities are refused)")
    }

    /// A reference to an entity never declared (no DTD) is an XML error, not an empty string.
    @Test func anUndeclaredEntityIsAnError() throws {
        let message = try #require(Self.problem(Self.parsed("""
            <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="&x;"><url>http://a/</url></file></metalink>
            """)))
        #expect(message.hasPrefix("line 1: "))
        #expect(message.contains("'x'"), "\(message)")
    }

    /// A million URLs: refused at the first file's 1,001st, without reading on (the document is 20 MB).
    @Test func aMillionURLsAreRefusedEarly() throws {
        var text = "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"a.bin\">"
        text += String(repeating: "<url>http://127.0.0.1/a</url>", count: 1_000_000)
        text += "</file></metalink>"
        #expect(Self.problem(Self.parsed(text)) == "file 'a.bin' has more than 1000 URLs")
        // Spread over files of 1,000 each: refused at the 100,001st in all.
        var spread = "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">"
        let file = "<file name=\"a.bin\">" + String(repeating: "<url>http://127.0.0.1/a</url>", count: 1_000) + "</file>"
        spread += String(repeating: file, count: 1_000) + "</metalink>"
        #expect(Self.problem(Self.parsed(spread)) == "has more than 100000 URLs")
    }

    /// A document past 16 MiB is refused once that much has been read.
    @Test func aTwentyMebibyteDocumentIsRefused() throws {
        var text = "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"a.bin\"><url>http://a/</url></file>"
        text += String(repeating: "<!-- padding padding padding padding padding padding padding padding -->\n", count: 20 << 14)
        text += "</metalink>"
        #expect(text.utf8.count > 20 << 20)
        #expect(Self.problem(Self.parsed(text)) == "is larger than 16 MiB (the most a metalink may be)")
        let dir = TempDirectory()
        try text.write(toFile: dir.file("big.meta4"), atomically: false, encoding: .utf8)
        #expect(Self.problem(Metalink.read(path: dir.file("big.meta4"))) == "is larger than 16 MiB (the most a metalink may be)")
    }

    @Test func boundsOnFilesAndText() {
        var limits = Metalink.Limits()
        limits.files = 2
        let three = "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">"
            + String(repeating: "<file name=\"a\"><url>http://a/</url></file>", count: 3) + "</metalink>"
        #expect(Self.problem(Metalink.parse(Array(three.utf8), limits: limits)) == "describes more than 2 files")
        let long = "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"a\"><url>http://a/"
            + String(repeating: "x", count: 10_000) + "</url></file></metalink>"
        #expect(Self.problem(Self.parsed(long)) == "<url> holds more than 8192 bytes of text")
    }

    @Test func whatIsNotAMetalink() {
        #expect(Self.problem(Self.parsed("<html><body/></html>")) == "is not a metalink (its root is <html> in namespace '')")
        #expect(Self.problem(Self.parsed("<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"/>")) == "describes no file")
        #expect(Self.problem(Self.parsed("<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file>")) == "has a <file> without a name")
        let cut = Self.problem(Self.parsed("<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">\n<file name=\"a\">"))
        #expect(cut?.hasPrefix("line 2: ") == true, "\(cut ?? "")")
        #expect(Self.problem(Self.parsed("<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"a\"><size>x</size></file></metalink>"))
                == "file 'a': size 'x' is not a number of bytes")
        #expect(Self.problem(Self.parsed("<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"a\"><hash type=\"sha-256\">abc</hash></file></metalink>"))
                == "file 'a': its sha256 hash is not 64 hex digits")
        #expect(Self.problem(Self.parsed("")) != nil)
    }

    /// An unknown hash algorithm is left out; a `<pieces>` of one haul does not compute is too.
    @Test func unknownAlgorithmsAreLeftOut() throws {
        let metalink = try Self.parsed("""
            <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="a">
            <hash type="sha-384">00</hash><hash type="md5">00000000000000000000000000000000</hash>
            <pieces type="sha-384" length="4"><hash>00</hash></pieces>
            <url>http://a/</url></file></metalink>
            """).get()
        #expect(metalink.files[0].hashes == [Checksum(algorithm: .md5, hex: String(repeating: "0", count: 32))])
        #expect(metalink.files[0].pieces == nil)
    }
}
