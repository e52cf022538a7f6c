import Foundation
import Testing
import TestSupport

/// A download's options are read in one place (`JobOptions`) for both faces that take them: the same bad value
/// is refused with the same line by an input file (`haul -i`, after its line number) and by aria2's `addUri`
/// (as the error's message), and by `changeGlobalOption` for the values it shares.
@Suite(.serialized) struct OptionFacesTests {
    static let refused: [(key: String, value: String, message: String)] = [
        ("split", "17", "split=17: from 1 to 16"),
        ("max-connection-per-server", "0", "max-connection-per-server=0: from 1 to 16"),
        ("out", "a/b", "out=a/b: is a path, not a file name"),
        ("out", "a\\b", "out=a\\b: is a path, not a file name"),
        ("out", "...", "out=...: is not a file name"),
        ("out", "x.part", "out=x.part: ends in .part, .part.json or .part.journal, the names haul keeps partial downloads under"),
        ("dir", "", "dir= needs a directory"),
        ("header", "NoColon", "header=NoColon is not \"Name: value\""),
        ("checksum", "sha256=abc", "checksum=sha256=abc: it: a sha256 digest is 64 hex digits"),
        ("checksum", "crc32=00", "checksum=crc32=00: it wants sha512=HEX, sha256=HEX, sha1=HEX or md5=HEX"),
        ("max-download-limit", "fast", "max-download-limit=fast is not a rate such as 500K or 2M (0 for none)"),
        ("user-agent", "a\u{1}b", "user-agent=a?b: contains control characters"),
        ("referer", "x\u{7F}", "referer=x?: contains control characters"),
    ]

    @Test func theSameBadValueIsRefusedAlikeByAnInputFileAndByAria2() async throws {
        let rpc = try await RPCService.start()
        let url = "http://127.0.0.1:1/a.bin"
        for (key, value, message) in Self.refused {
            let listed = try await HaulProcess.run(["--plain", "-i", "-"], in: rpc.dir.path,
                                                   stdin: "\(url)\n  \(key)=\(value)\n")
            #expect(listed.status == 2, "\(key)=\(value)")
            #expect(listed.stderr == "haul: -: line 2: \(message)\n")
            let added = try await rpc.call("aria2.addUri", [[url], [key: value]])
            #expect(added.status == 400 && added.errorCode == 1, "\(key)=\(value): \(added.body)")
            #expect(added.errorMessage == message)
        }
        // The global options that a download has too are read the same way.
        for (key, value) in [("split", "17"), ("max-connection-per-server", "0"), ("max-download-limit", "fast")] {
            let message = try #require(Self.refused.first { $0.key == key && $0.value == value }?.message)
            let changed = try await rpc.call("aria2.changeGlobalOption", [[key: value]])
            #expect(changed.status == 400 && changed.errorMessage == message, "\(changed.body)")
        }
        #expect(try await rpc.stillAnswers(), "the service's log:\n\(rpc.log)")
    }
}
