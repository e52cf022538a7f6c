import Foundation
import HaulCore
import Testing
import TestSupport

/// The same inputs given to aria2c 1.36 (Debian's) and to haul: a metalink of several files, each from two
/// sources, one file with a mirror, and FTP alone and beside HTTP. Where aria2 succeeds, haul succeeds with identical bytes.
@Suite struct SourcesAgainstAria2Tests {
    static let aria2c = "/usr/bin/aria2c"

    /// `url` on another host of this machine: `localhost` for `127.0.0.1`, a second source to anyone who counts
    /// connections per host.
    static func otherHost(_ url: String) -> String {
        url.replacingOccurrences(of: "//127.0.0.1:", with: "//localhost:")
    }

    @Test func aMetalinkAndMirrorsGiveWhatAria2Gives() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            var document = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                + "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">\n"
            for name in ["small.bin", "medium.bin"] {
                document += """
                      <file name="\(name)">
                        <size>\(expectedBytes(name).count)</size>
                        <hash type="sha-256">\(expectedSHA256(name))</hash>
                        <url priority="1">\(server.downloadURL(name))</url>
                        <url priority="2">\(Self.otherHost(server.downloadURL(name)))</url>
                      </file>

                    """
            }
            document += "</metalink>\n"
            try document.write(toFile: dir.file("set.meta4"), atomically: true, encoding: .utf8)

            let aria2 = try await HaulProcess.run(["--no-conf", "-q", "--file-allocation=none", "-d", "aria2",
                                                   "-M", "set.meta4"], in: dir.path, binary: Self.aria2c)
            #expect(aria2.status == 0, "aria2c: \(aria2.stdout) \(aria2.stderr)")
            let haul = try await HaulProcess.run(["--no-config", "--plain", "-q", "-s", "4", "-o", "haul", "set.meta4"],
                                                 in: dir.path)
            #expect(haul.status == 0, "\(haul.stderr)")
            for name in ["small.bin", "medium.bin"] {
                // aria2 puts a metalink's files straight into -d; haul puts several under the document's folder.
                let theirs = try FileDigest.hex(of: dir.file("aria2/\(name)"))
                #expect(try FileDigest.hex(of: dir.file("haul/set/\(name)")) == theirs, "\(name)")
                #expect(theirs == expectedSHA256(name))
            }

            let mirror = Self.otherHost(server.downloadURL("medium.bin"))
            let aria2Mirrors = try await HaulProcess.run(["--no-conf", "-q", "--file-allocation=none", "-s", "4", "-d",
                                                          "aria2-mirrors", server.downloadURL("medium.bin"), mirror],
                                                         in: dir.path, binary: Self.aria2c)
            #expect(aria2Mirrors.status == 0, "aria2c: \(aria2Mirrors.stdout) \(aria2Mirrors.stderr)")
            let haulMirrors = try await HaulProcess.run(["--no-config", "--plain", "-q", "-s", "4", "-o", "haul-mirrors",
                                                         server.downloadURL("medium.bin"), "--mirror", mirror],
                                                        in: dir.path)
            #expect(haulMirrors.status == 0, "\(haulMirrors.stderr)")
            #expect(try FileDigest.hex(of: dir.file("haul-mirrors/medium.bin"))
                    == FileDigest.hex(of: dir.file("aria2-mirrors/medium.bin")))
        }
    }

    /// FTP from vsftpd, alone over four connections and as one of two sources beside HTTP (the same bytes on
    /// both servers): aria2c and haul fetch the same file.
    @Test(.enabled(if: Vsftpd.unavailable == nil, "\(Vsftpd.unavailable ?? "")"))
    func ftpAloneAndBesideHTTPGivesWhatAria2Gives() async throws {
        let dir = TempDirectory()
        let ftp = try Vsftpd()
        defer { ftp.stop() }
        try ftp.serve("medium.bin", expectedBytes("medium.bin"))
        try await withSampleServer { server in
            let inputs: [(name: String, urls: [String])] = [
                ("ftp", [ftp.url("medium.bin")]),
                ("ftp-http", [ftp.url("medium.bin"), server.downloadURL("medium.bin")]),
            ]
            for (name, urls) in inputs {
                let aria2 = try await HaulProcess.run(["--no-conf", "-q", "--file-allocation=none", "-s", "4",
                                                       "-d", "aria2-\(name)"] + urls, in: dir.path, binary: Self.aria2c)
                #expect(aria2.status == 0, "aria2c \(name): \(aria2.stdout) \(aria2.stderr)")
                let haul = try await HaulProcess.run(["--no-config", "--plain", "-q", "-s", "4", "-o", "haul-\(name)",
                                                      urls[0]] + urls.dropFirst().flatMap { ["--mirror", $0] },
                                                     in: dir.path)
                #expect(haul.status == 0, "haul \(name): \(haul.stderr)")
                let theirs = try FileDigest.hex(of: dir.file("aria2-\(name)/medium.bin"))
                #expect(theirs == expectedSHA256("medium.bin"), "\(name)")
                #expect(try FileDigest.hex(of: dir.file("haul-\(name)/medium.bin")) == theirs, "\(name)")
            }
            // The FTP server was asked (RETR after REST for the ranges past the first).
            #expect(ftp.commands.contains { $0.hasPrefix("RETR ") } && ftp.commands.contains { $0.hasPrefix("REST ") })
        }
    }
}
