import Foundation
import HaulCore
import SampleServer
import TestSupport
import Testing

/// `--checksum` is computed while the bytes stream (no read of the file afterwards), in sha512 too, and
/// `--checksum-file` checks every download its list names.
@Suite struct ChecksumTests {
    /// The bytes haul reads from files after a download with `--checksum`, counted by strace: none when the
    /// download went in order from byte 0 (the old way read the whole file back).
    @Test(arguments: ["sha256", "sha512"])
    func aChecksumIsComputedWhileTheBytesStreamNotReadBack(algorithm: String) async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let digest = try await HaulProcess.run(["-q", "-O", "reference.bin", server.downloadURL("medium.bin")],
                                                   in: dir.path)
            #expect(digest.status == 0)
            let expected = try shaHex(algorithm, of: dir.file("reference.bin"))
            let trace = dir.file("trace")
            let exit = try await HaulProcess.run(
                ["-q", "--checksum", "\(algorithm)=\(expected)", server.downloadURL("medium.bin")], in: dir.path,
                // Only the calls on the part file: the loader's reads of libraries are not the download's.
                wrapper: ["/usr/bin/strace", "-f", "-qq", "-e", "trace=read,pread64,readv,preadv,preadv2",
                          "-P", dir.file("medium.bin.part"), "-o", trace])
            #expect(exit.status == 0, "\(exit.stderr)")
            // "pid pread64(fd, ..., count, offset) = N", or its "<... pread64 resumed> ...) = N" half.
            let reads = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n")
                .filter { $0.contains("pread") }
                .compactMap { line in line.components(separatedBy: ") = ").last.flatMap { Int($0.prefix { $0.isNumber }) } }
                .filter { $0 > 0 }
            #expect(reads.isEmpty, "\(reads.prefix(5))")
            #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        }
    }

    @Test func aChecksumFileChecksEveryDownloadItNames() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            let sums = dir.file("SHA256SUMS")
            try """
                \(expectedSHA256("medium.bin"))  medium.bin
                \(String(repeating: "0", count: 64)) *small.bin
                """.write(toFile: sums, atomically: true, encoding: .utf8)
            let urls = ["medium.bin", "small.bin", "large.bin"].map { server.downloadURL($0) }
            let exit = try await HaulProcess.run(["--plain", "-q", "--checksum-file", sums] + urls, in: dir.path)
            #expect(exit.status == 9, "\(exit.stderr)")
            let lines = exit.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].hasPrefix("haul: small.bin: checksum mismatch: sha256 is "), "\(exit.stderr)")
            // The good one and the one not listed are there; the bad one took no name.
            #expect(dir.listing().filter { !$0.hasPrefix("SHA256SUMS") } == ["large.bin", "medium.bin", "small.bin.part"])
        }
    }

    @Test func aBadChecksumFileIsAUsageError() async throws {
        let dir = TempDirectory()
        try "not a checksum line\n".write(toFile: dir.file("SUMS"), atomically: true, encoding: .utf8)
        let exit = try await HaulProcess.run(["--checksum-file", "SUMS", "http://127.0.0.1:1/x"], in: dir.path)
        #expect(exit.status == 2)
        #expect(exit.stderr.contains("--checksum-file SUMS line 1"), "\(exit.stderr)")
        #expect(dir.listing() == ["SUMS"])
    }
}

/// The hex digest of a file by `sha256sum` / `sha512sum`, as a user would check it.
private func shaHex(_ algorithm: String, of path: String) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/\(algorithm)sum")
    process.arguments = [path]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: output, as: UTF8.self).split(separator: " ").first.map(String.init) ?? ""
}
