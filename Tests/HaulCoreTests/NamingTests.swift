import Foundation
import TestSupport
import Testing
@testable import HaulCore

@Suite struct FileNamingTests {
    @Test(arguments: [
        ("../../x", "x"),
        ("/etc/passwd", "passwd"),
        ("..", "download"),
        (".", "download"),
        ("", "download"),
        ("a\u{0}b\u{1}c\u{7F}d\nname", "abcdname"),
        ("..\\..\\windows\\evil.exe", "evil.exe"),
        (".bashrc", "bashrc"),
        ("report\u{202E}fdp.exe", "reportfdp.exe"),
        ("  spaced name.txt  ", "spaced name.txt"),
        ("fotó.jpg", "fotó.jpg"),
        // Found by the fuzz pass. A slash or a dot that a combining mark joins into one Character:
        ("a/\u{301}b", "\u{301}b"),
        ("../\u{301}../\u{301}etc/\u{301}passwd", "\u{301}passwd"),
        (".\u{301}bashrc", "bashrc"),
        // White space after leading dots:
        (". \u{FFFD}", "\u{FFFD}"),
        ("..  .profile", "profile"),
        // Cut to maxBytes: a stem that is one huge Character leaves only the extension; no extension, a space.
        ("x" + String(repeating: "\u{301}", count: 300) + ".txt", "txt"),
        (String(repeating: "a", count: FileNaming.maxBytes - 1) + " bcd", String(repeating: "a", count: FileNaming.maxBytes - 1)),
        // A cut that ends right after a joiner (the joiner belongs to the Character before it) drops it.
        // (224 bytes: 73 x 3 + "a" + the joiner's 3 leave no room for the 2 bytes of "é".)
        (String(repeating: "\u{FFFD}", count: 73) + "a\u{200D}é", String(repeating: "\u{FFFD}", count: 73) + "a"),
    ])
    func sanitize(input: String, expected: String) {
        #expect(FileNaming.sanitize(input) == expected)
    }

    @Test func longNamesAreCutOnACharacterBoundaryKeepingTheExtension() {
        let name = String(repeating: "é", count: 300) + ".jpeg"
        let safe = FileNaming.sanitize(name)
        #expect(safe.utf8.count <= FileNaming.maxBytes)
        #expect(safe.hasSuffix(".jpeg"))
        #expect(safe.dropLast(5).allSatisfy { $0 == "é" })
    }

    /// Found by the fuzz pass: a short limit and an extension longer than it.
    @Test func truncateKeepsToTheLimit() {
        #expect(FileNaming.truncate("\u{FFFD}.", toBytes: 0) == "")
        #expect(FileNaming.truncate("abc.jpeg", toBytes: 3) == "abc")
        #expect(FileNaming.truncate("abcdef.jpeg", toBytes: 7) == "ab.jpeg")
    }

    @Test func contentDispositionForms() {
        #expect(FileNaming.filename(fromContentDisposition: "attachment; filename=\"a b.txt\"") == "a b.txt")
        #expect(FileNaming.filename(fromContentDisposition: "attachment; filename=plain.bin; size=3") == "plain.bin")
        #expect(FileNaming.filename(fromContentDisposition: "inline; filename=\"semi;colon.txt\"") == "semi;colon.txt")
        #expect(FileNaming.filename(fromContentDisposition: "attachment; filename=\"q\\\"uote\"") == "q\"uote")
        #expect(FileNaming.filename(
            fromContentDisposition: "attachment; filename=\"fallback.txt\"; filename*=UTF-8''na%C3%AFve%20file.txt")
            == "naïve file.txt")
        #expect(FileNaming.filename(fromContentDisposition: "attachment") == nil)
    }

    /// RFC 6266 with RFC 8187's two charsets, and a header that breaks the syntax ignored as a whole (the
    /// name then comes from the URL).
    @Test func contentDispositionFollowsRFC6266() {
        func name(_ header: String) -> String? { FileNaming.filename(fromContentDisposition: header) }
        #expect(name("attachment; filename*=ISO-8859-1''caf%E9.bin") == "café.bin")
        #expect(name("attachment; filename*=iso-8859-1'en'plain.bin") == "plain.bin")
        #expect(name("attachment; filename*=UTF-8''caf%C3%A9.bin") == "café.bin")
        #expect(name("attachment; filename*=UTF-8''%e2%82%ac%20rates.txt") == "€ rates.txt")
        #expect(name("attachment; filename*=ISO-8859-1''caf%E9.bin; filename=\"fallback.bin\"") == "café.bin")
        // tc2231's attwithfn2231utf8-bad alone: no name from the header (the URL's name then).
        #expect(name("attachment; filename*=iso-8859-1''foo-%c3%a4-%e2%82%ac.html") == nil)
        #expect(name("attachment; filename*=iso-8859-1''foo-%c3%a4.html") == "foo-Ã¤.html")
        // A filename* that cannot be read is left out: the plain filename stands.
        for broken in ["UTF-8''caf%E9.bin", "UTF-8''bad%zz", "UTF-8''half%E", "KOI8-R''x.bin", "UTF-8'x.bin",
                       "x.bin", "\"UTF-8''quoted.bin\"",
                       // tc2231's attwithfn2231utf8-bad: UTF-8 bytes labelled ISO-8859-1, 0x82 a C1 control there.
                       "iso-8859-1''foo-%c3%a4-%e2%82%ac.html", "ISO-8859-1''bell%07.bin", "ISO-8859-1''del%7F.bin"] {
            #expect(name("attachment; filename=\"fallback.bin\"; filename*=\(broken)") == "fallback.bin", "\(broken)")
        }
        // Invalid syntax: the whole header means nothing.
        for invalid in ["filename=\"x.bin\"", "; filename=\"x.bin\"", "attachment; filename=\"x.bin",
                        "attachment; filename=\"a.bin\"; filename=\"b.bin\"", "attachment filename=\"x.bin\"",
                        "attachment; filename=\"x.bin\" size=3", "attachment; filename=a b.bin",
                        "attachment; filename=caf\u{E9}.bin", "attachment; filename=x@y.bin", "attachment; filename",
                        "attachment; FILENAME*=UTF-8''a.bin; filename*=UTF-8''b.bin", "attach\u{E9}; filename=x.bin",
                        "attachment; filename=\"f.bin\"; filename*=UTF-8''sp ace.bin"] {
            #expect(name(invalid) == nil, "\(invalid)")
        }
        #expect(name("attachment; filename=\"x.bin\";") == "x.bin")
        #expect(name("  attachment ;filename = \"x.bin\" ") == "x.bin")
        #expect(name("attachment; filename=\"\"") == nil)
    }

    /// A quoted filename's bytes past ASCII are UTF-8 when they are valid UTF-8, else ISO-8859-1.
    @Test func headerValuesAreUTF8ElseLatin1() {
        func value(_ bytes: [UInt8]) -> String {
            var builder = ResponseHead.Builder()
            bytes.withUnsafeBytes { builder.add(line: $0) }
            return builder.lines.first?.value ?? "(none)"
        }
        let prefix = Array("Content-Disposition: attachment; filename=\"caf".utf8)
        let latin1 = value(prefix + [0xE9] + Array(".bin\"\r\n".utf8))
        #expect(FileNaming.filename(fromContentDisposition: latin1) == "café.bin")
        let utf8 = value(prefix + [0xC3, 0xA9] + Array(".bin\"\r\n".utf8))
        #expect(FileNaming.filename(fromContentDisposition: utf8) == "café.bin")
        #expect(value(Array("X-A: plain\r\n".utf8)) == "plain")
    }

    /// No download is named as haul's own files beside a download: a file named `data.bin.part` was taken by
    /// a later download of `data.bin` for its part (with no state: "starting over") and overwritten, and
    /// finished `data.bin.part.json` and `.part.journal` files were removed as unreadable state.
    @Test func haulsOwnSuffixesAreNeverAFinalName() {
        #expect(FileNaming.sanitize("data.bin.part") == "data.bin_part")
        #expect(FileNaming.sanitize("data.bin.part.json") == "data.bin.part_json")
        #expect(FileNaming.sanitize("data.bin.part.journal") == "data.bin.part_journal")
        #expect(FileNaming.sanitize("café.part") == "café_part")
        #expect(FileNaming.name(contentDisposition: "attachment; filename=\"x.part\"", url: "http://h/y") == "x_part")
        #expect(FileNaming.name(contentDisposition: nil, url: "http://h/dir/x.bin.part.json") == "x.bin.part_json")
        #expect(FileNaming.sanitize("x.partial") == "x.partial")
        #expect(FileNaming.sanitize(".part") == "part")
        // -O and aria2's `out` are refused or renamed the same way; a -O too long for haul's suffixes too.
        #expect(FileNaming.problem(withPlainName: "x.part") != nil)
        #expect(FileNaming.problem(withPlainName: "x.part.journal") != nil)
        #expect(FileNaming.problem(withPlainName: String(repeating: "a", count: 240)) != nil)
        #expect(FileNaming.problem(withPlainName: String(repeating: "a", count: 224)) == nil)
    }

    /// The kernel reads a name as bytes; Swift compares and searches a String by Character (grapheme
    /// cluster). A `/` with a combining mark after it (U+0301), or with a prepended letter before it (U+0D4E,
    /// MALAYALAM LETTER DOT REPH, joins the next scalar into its Character), is a Character that is not "/";
    /// and a name whose last dot such a letter joins does not have the suffix ".part" for `hasSuffix`. So
    /// `-O ../\u{301}x` wrote into the output directory's parent, `-O a\u{0D4E}/b` followed a link
    /// `a\u{0D4E}` out of it, and a server could name a finished file `a\u{0D4E}.part`: the part file of a
    /// later download of `a\u{0D4E}`, which took it for its own and started it over. All found by bytes now.
    @Test(arguments: ["../\u{301}x", "a\u{0D4E}/b", "x/\u{20DD}", "\u{0D4E}/", "a/\u{301}.part", "a\u{0600}/b"])
    func aSlashInsideACharacterStillMakesAPath(name: String) {
        #expect(FileNaming.problem(withPlainName: name) != nil, "\(name.unicodeScalars.map(\.value))")
    }

    @Test(arguments: ["a\u{0D4E}.part", "a\u{0D4E}.part.json", "a\u{0D4E}.part.journal", "\u{111C2}\u{0D4E}.part"])
    func haulsOwnSuffixesAreFoundByTheirBytes(name: String) {
        #expect(FileNaming.problem(withPlainName: name) != nil, "\(name.unicodeScalars.map(\.value))")
        // The last dot becomes `_`, as for any name: as long, and no longer one of haul's.
        var expected = Array(name.unicodeScalars)
        expected[expected.lastIndex(of: ".")!] = "_"
        let safe = FileNaming.sanitize(name)
        #expect(Array(safe.unicodeScalars) == expected, "\(safe.unicodeScalars.map(\.value))")
        #expect(FileNaming.name(contentDisposition: "attachment; filename*=UTF-8''"
                                + name.utf8.map { String(format: "%%%02X", $0) }.joined(), url: "http://h/y") == safe)
    }

    @Test func hostileContentDispositionStaysAName() {
        let header = "attachment; filename=\"../../../../etc/cron.d/evil\""
        #expect(FileNaming.name(contentDisposition: header, url: "http://h/x") == "evil")
        #expect(FileNaming.name(contentDisposition: "attachment; filename=\"/etc/passwd\"", url: "http://h/x") == "passwd")
    }

    @Test func namesFromURLs() {
        #expect(FileNaming.lastPathSegment(of: "http://h/a/b/file%20one.iso?x=1#y") == "file one.iso")
        #expect(FileNaming.lastPathSegment(of: "http://h") == "index.html")
        #expect(FileNaming.lastPathSegment(of: "http://h/dir/") == "index.html")
        #expect(FileNaming.name(contentDisposition: nil, url: "http://h/%2e%2e%2fsecret") == "secret")
        #expect(FileNaming.lastPathSegment(of: "http://h/files/download?photo%20one.jpg") == "photo one.jpg")
        #expect(FileNaming.lastPathSegment(of: "http://h/get.php?id=3&x=1") == "get.php")
        #expect(FileNaming.name(contentDisposition: nil, url: "http://h/files/download?../../etc/passwd") == "passwd")
    }

    @Test func splitKeepsTheLastExtension() {
        #expect(FileNaming.split("archive.tar.gz") == ("archive.tar", ".gz"))
        #expect(FileNaming.split("README") == ("README", ""))
    }

    func take(_ path: String, _ policy: ExistingFilePolicy, continuing: Bool = false) throws -> Claim? {
        try Claim.take(FilePath.baseName(of: path), in: OutputDirectory(FilePath.parent(of: path)), policy: policy,
                       url: "http://h/a.bin", resume: true, continuing: continuing, notice: { _ in }).claim
    }

    @Test func renamePolicyPicksTheNextFreeNameAndLocksIt() throws {
        let dir = TempDirectory()
        let first = try #require(try take(dir.file("a.bin"), .rename))
        #expect(first.path == dir.file("a.bin"))
        // The first claim holds a.bin.part locked: a second download of the same name must not share it.
        let second = try #require(try take(dir.file("a.bin"), .rename))
        #expect(second.path == dir.file("a.1.bin"))
        FileManagerTouch(dir.file("a.2.bin"))
        let third = try #require(try take(dir.file("a.bin"), .rename))
        #expect(third.path == dir.file("a.3.bin"))
        // Released (its owner ended), a.bin.part can be claimed again: that is how a resume finds it, as a
        // resume takes it (`continuing`: a process another test spawns this moment may hold a copy of the
        // closed descriptor, and with it the lock, until it execs; CI's sanitizer run once saw a.4.bin here).
        try first.part.close()
        let again = try #require(try take(dir.file("a.bin"), .rename, continuing: true))
        #expect(again.path == dir.file("a.bin"))
        FileManagerTouch(dir.file("done.bin"))
        let skipped = try take(dir.file("done.bin"), .skip)
        #expect(skipped == nil)
        #expect(throws: HaulError.self) { try take(dir.file("a.1.bin"), .overwrite) }
    }
}

@Suite struct FilePathTests {
    /// A name is bytes to the kernel: split, prefixes, suffixes and equality are taken on them, not on
    /// Characters (where a `/` or a `.` that a neighbouring scalar joins into one Character is not found,
    /// and canonically equivalent but different names are equal).
    @Test func namesAreComparedAndSplitAsBytes() {
        #expect(FilePath.components(of: "/a//b/\u{301}c/") == ["a", "b", "\u{301}c"])
        #expect(FilePath.components(of: "x\u{0D4E}/y").map { Array($0.unicodeScalars) } == [["x", "\u{0D4E}"], ["y"]])
        #expect(FilePath.components(of: "").isEmpty && FilePath.components(of: "//").isEmpty)
        #expect(FilePath.hasSeparator("a/\u{301}") && !FilePath.hasSeparator("a\u{301}"))
        #expect(FilePath.hasSuffix("a\u{0D4E}.part", ".part") && !FilePath.hasSuffix("a.par", ".part"))
        #expect(!FilePath.hasPrefix("e\u{301}.x", "\u{E9}") && FilePath.hasPrefix("e\u{301}.x", "e"))
        #expect(FilePath.same("..", "..") && !FilePath.same("\u{E9}", "e\u{301}"))
        // What String's own operations say of the same names: why they are not used on paths.
        #expect(!"a/\u{301}".contains("/") && !"a\u{0D4E}.part".hasSuffix(".part") && "\u{E9}" == "e\u{301}")
    }

    /// A state file's temporaries are found by their bytes: a file whose name is only canonically equivalent
    /// (the same marks in another order) belongs to another download and is not removed as a leftover.
    @Test func onlyATemporaryOfThisVeryNameIsALeftover() {
        let name = "a\u{316}\u{301}.part.json"
        #expect(OutputDirectory.isTemporary(name + ".1a.tmp", of: name))
        #expect(!OutputDirectory.isTemporary("a\u{301}\u{316}.part.json.1a.tmp", of: name))
    }

    @Test func parentsBaseNamesAndJoins() {
        #expect(FilePath.parent(of: "o") == ".")
        #expect(FilePath.parent(of: "a/b/c") == "a/b")
        #expect(FilePath.parent(of: "a/b/") == "a")
        #expect(FilePath.parent(of: "/c") == "/")
        #expect(FilePath.parent(of: "/") == "/")
        #expect(FilePath.baseName(of: "a/b/c.txt") == "c.txt")
        #expect(FilePath.baseName(of: "c") == "c")
        #expect(FilePath.join("o", "x") == "o/x")
        #expect(FilePath.join("o/", "x") == "o/x")
    }

    /// Read on the bytes, as the kernel reads a path: every `/` separates, "/" and "" keep their meaning.
    @Test func edgesAndNonASCIINames() {
        #expect(FilePath.parent(of: "") == ".")
        #expect(FilePath.baseName(of: "") == "")
        #expect(FilePath.parent(of: "//") == "/")
        #expect(FilePath.baseName(of: "/") == "")
        #expect(FilePath.baseName(of: "a/b//") == "b")
        #expect(FilePath.parent(of: "a//b") == "a")
        #expect(FilePath.parent(of: "dir/\u{e9}t\u{e9}.txt") == "dir")
        #expect(FilePath.baseName(of: "r\u{e9}p/\u{e9}t\u{e9}.txt") == "\u{e9}t\u{e9}.txt")
        // A combining mark after a slash does not hide it: the kernel splits there.
        #expect(FilePath.baseName(of: "a/\u{301}x") == "\u{301}x")
        #expect(FilePath.parent(of: "a/\u{301}x") == "a")
    }
}

@Suite struct URLCheckTests {
    @Test(arguments: ["http://example.com/x", "https://h:8080/a?b", "HTTP://H/", "http://h:65535/", "http://h:1",
                      "ftp://h/x", "FTPS://u:p@h:990/a/b", "sftp://u@h:2222/~/x", "scp://h/etc/x"])
    func accepted(url: String) {
        #expect(URLCheck.problem(with: url) == nil)
    }

    @Test(arguments: [
        ("gopher://h/x", "unsupported URL scheme \"gopher\""), ("file:///etc/passwd", "unsupported URL scheme \"file\""),
        ("sftp:///x", "URL has no host"), ("not a url", "URL contains spaces or control characters"),
        ("http://", "URL has no host"), ("", "empty URL"), ("example.com/x", "not a valid URL"),
        // libcurl refuses these as "URL using bad/illegal format", which from a redirect is the server's
        // fault (exit 7); given by the user, they are the user's to fix (exit 2), said so before a connection.
        ("http://h:99999/x", "port 99999 is not from 1 to 65535"), ("http://h:0/", "port 0 is not from 1 to 65535"),
        ("https://[::1]:65536/", "port 65536 is not from 1 to 65535"),
    ])
    func refused(url: String, reason: String) {
        #expect(URLCheck.problem(with: url) == reason)
    }

    /// The usual URLs are taken without `URLComponents`: each download checks its URL.
    @Test(arguments: ["http://127.0.0.1:8080/files/a.bin", "HTTPS://Example.COM/x/y.tar.gz?v=1&w=2#top",
                      "http://h/", "https://h", "http://h/a:b@c/!$&'()*+,;=-._~?/?:@", "http://[::1]:80/"])
    func theUsualURLsNeedNoParse(url: String) {
        #expect(URLCheck.isPlainlyValid(url) == !url.contains("["))
        #expect(URLCheck.problem(with: url) == nil)
    }

    /// What the glance takes, the parse takes too, and `problem(with:)` says what the parse says: over URLs
    /// made of pieces that each rule turns on (schemes, hosts, ports, user names, percent signs, IPv6
    /// brackets, spaces, non-ASCII letters, a second `#`).
    @Test func theGlanceNeverTakesWhatTheParseRefuses() {
        let schemes = ["http://", "https://", "HtTp://", "httpx://", "http:/", "http:", "ftp://", "", "https:///"]
        let hosts = ["h", "127.0.0.1", "", "[::1]", "[::1", "u@h", "u:p@h", "b\u{FC}cher", "a b", "h%41", "h.", "-h",
                     "h_h", "h~", "h!$&'()*+,;=", "h<", "h\\", "h^"]
        let ports = ["", ":", ":80", ":8x", "::80", ":65535", ":65536", ":0", ":99999999999999999999"]
        let rests = ["", "/", "/a/b.bin", "?q=1", "#f", "#f#g", "/a%20b", "/a b", "/a<b", "/\u{E4}", "/a?b#c/d?e",
                     "/[x]", "/a|b", "/a\"b", "/a`b", "/a{b}", "/a^b", "/\u{7F}", "/@:", "//x", "/a#"]
        var generator = SplitMix64(seed: 15)
        var glanced = 0
        for _ in 0..<20_000 {
            let url = schemes.randomElement(using: &generator)! + hosts.randomElement(using: &generator)!
                + ports.randomElement(using: &generator)! + rests.randomElement(using: &generator)!
                + rests.randomElement(using: &generator)!
            if URLCheck.isPlainlyValid(url) {
                glanced += 1
                #expect(URLCheck.problemByParsing(url) == nil, "\(url)")
            }
            #expect(URLCheck.problem(with: url) == URLCheck.problemByParsing(url), "\(url)")
        }
        #expect(glanced > 100)
    }
}

func FileManagerTouch(_ path: String) {
    let fd = open(path, O_CREAT | O_WRONLY, 0o644)
    close(fd)
}
