import Foundation
import TestSupport
import Testing

/// A bad digest is worded for the place it was given (`-i`'s `checksum=`, `--checksum`), from the problem as
/// data: the same words as when one message was cut out of another.
@Suite struct ChecksumWordingTests {
    @Test(arguments: [
        ("http://127.0.0.1:1/a.bin\n  checksum=sha256=abc\n",
         "haul: -: line 2: checksum=sha256=abc: it: a sha256 digest is 64 hex digits"),
        ("http://127.0.0.1:1/a.bin\n  checksum=crc32=00\n",
         "haul: -: line 2: checksum=crc32=00: it wants sha512=HEX, sha256=HEX, sha1=HEX or md5=HEX"),
    ])
    func anInputFilesChecksumLine(list: String, expected: String) async throws {
        let dir = TempDirectory()
        let run = try await HaulProcess.run(["--plain", "-i", "-"], in: dir.path, stdin: list)
        #expect(run.status == 2)
        #expect(run.stderr == expected + "\n")
    }
}
