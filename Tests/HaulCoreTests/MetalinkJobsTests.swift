import Foundation
import HaulCore
import Testing

/// A metalink's files as downloads: where each goes, which names are refused, how its sources are ordered.
@Suite struct MetalinkJobsTests {
    static let template = DownloadJob(url: "", outputDirectory: "/downloads")

    /// A multi-file metalink: one folder named after the document; a file's directories below it; each job
    /// confined to the output directory; its strongest hash and pieces kept. The names that would leave the
    /// folder (or mean something else) are refused one by one, the others go on.
    @Test func aMultiFileMetalinkGoesUnderOneFolder() throws {
        let metalink = try Metalink.read(path: MetalinkParserTests.fixture("multi.meta4")).get()
        let planned = MetalinkJobs.plan(metalink, documentName: "/tmp/release-2.0.meta4", template: Self.template)
        #expect(planned.jobs.map(\.outputDirectory) == ["/downloads/release-2.0/disc", "/downloads/release-2.0"])
        #expect(planned.jobs.map(\.outputName) == ["one.iso", "two.bin"])
        #expect(planned.jobs.allSatisfy { $0.confinedTo == "/downloads" })
        #expect(planned.jobs.map { $0.checksum?.algorithm } == [.sha256, .sha512])
        #expect(planned.refused == [
            "file '../escape.bin': goes up out of the folder (..)",
            "file '/etc/absolute.bin': is an absolute path",
            "file 'sub//empty-part.bin': has an empty directory part",
            "file 'dir/../../up.bin': goes up out of the folder (..)",
            "file 'bell?.bin': contains control characters",
            "file 'rsync-only.bin': no source of a scheme haul fetches",
        ])
    }

    /// One file: straight into the output directory, no folder, no confinement needed.
    @Test func aSingleFileGoesIntoTheOutputDirectory() throws {
        let metalink = try Metalink.read(path: MetalinkParserTests.fixture("distribution.meta4")).get()
        var template = Self.template
        template.checksum = Checksum(algorithm: .md5, hex: String(repeating: "0", count: 32))
        let planned = MetalinkJobs.plan(metalink, documentName: "x.meta4", template: template, locations: ["se", "fr"])
        let job = try #require(planned.jobs.first)
        #expect(job.outputDirectory == "/downloads")
        #expect(job.outputName == "LibreOffice_24.2.7_Linux_x86-64_deb.tar.gz")
        #expect(job.confinedTo == nil)
        #expect(job.checksum?.algorithm == .sha256)
        #expect(job.pieces?.hashes.count == 4)
        // Priority 2 first; of the two at 3, France (preferred) before Germany; then 5 (Sweden, preferred but
        // later by priority, after the FTP mirror at 4); the one without a priority last.
        #expect(job.sources.map(\.url).map { $0.split(separator: "/")[1] } == ["127.0.0.1:8081", "127.0.0.1:8082", "127.0.0.1:8083",
                                                                                  "127.0.0.1:2121", "127.0.0.1:8084", "127.0.0.1:8080"])
        #expect(job.url == job.sources[0].url)
    }

    @Test func sourcesAreOrderedByPriorityThenLocationThenDocument() {
        let sources = [
            DownloadSource(url: "http://a/", priority: nil, location: "de"),
            DownloadSource(url: "http://b/", priority: 2, location: "us"),
            DownloadSource(url: "http://c/", priority: 2, location: "de"),
            DownloadSource(url: "http://d/", priority: 1, location: nil),
            DownloadSource(url: "http://e/", priority: 2, location: "fr"),
            DownloadSource(url: "http://f/", priority: 2, location: "us"),
        ]
        let ordered = MetalinkJobs.ordered(sources, locations: MetalinkJobs.locations(" FR, de ,"))
        #expect(ordered.map(\.url) == ["http://d/", "http://e/", "http://c/", "http://b/", "http://f/", "http://a/"])
        #expect(MetalinkJobs.ordered(sources, locations: []).map(\.url)
                == ["http://d/", "http://b/", "http://c/", "http://e/", "http://f/", "http://a/"])
    }

    /// What is shown of a file that a listing would hide goes (as from a server's name); a name haul keeps
    /// partial downloads under is refused.
    @Test func namesAreSanitised() {
        let metalink = Metalink(files: [
            Metalink.File(name: "a/\u{202E}gpj.exe", urls: [DownloadSource(url: "http://a/")]),
            Metalink.File(name: "b.part", urls: [DownloadSource(url: "http://a/")]),
            Metalink.File(name: "c\\d.bin", urls: [DownloadSource(url: "http://a/")]),
        ])
        let planned = MetalinkJobs.plan(metalink, documentName: nil, template: Self.template)
        #expect(planned.jobs.map(\.outputName) == ["gpj.exe"])
        #expect(planned.jobs.map(\.outputDirectory) == ["/downloads/metalink/a"])
        #expect(planned.refused.count == 2)
        #expect(planned.refused[0].hasPrefix("file 'b.part': 'b.part' ends in .part"))
        #expect(planned.refused[1] == "file 'c\\d.bin': contains a backslash")
    }

    /// A job with its pieces is stored and read back as it was; one stored without them reads as none.
    @Test func piecesTravelWithTheJob() throws {
        var job = Self.template
        job.url = "http://a/"
        job.pieces = PieceHashes(algorithm: .sha256, length: 4, hashes: ["ab", "cd"])
        let data = try JSONEncoder().encode(job)
        #expect(try JSONDecoder().decode(DownloadJob.self, from: data) == job)
        job.pieces = nil
        let older = try JSONEncoder().encode(job)
        #expect(!String(decoding: older, as: UTF8.self).contains("pieces"))
        #expect(try JSONDecoder().decode(DownloadJob.self, from: older).pieces == nil)
    }
}
