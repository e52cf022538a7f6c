import Foundation
import HaulCore
import SampleServer
import Testing
import TestSupport

/// Categories (issue 75 point 2) through the real binary: the config file's `[categories.NAME]` place a
/// download by its final name, in a plain run and through the service; a directory given wins.
@Suite struct CategoryEndToEndTests {
    static let small = GeneratedFile(name: "small.bin", size: 64 << 10)
    static let archive = GeneratedFile(name: "clip.tar.gz", size: 32 << 10)
    static let configuration = SampleServerConfiguration(port: 0, files: [small, archive], jpegs: false)

    /// `compressed` (gz) comes first in the file: `clip.tar.gz` is still an archive's, by its longest extension.
    static let config = """
        output-dir = "~/dl"

        [categories.compressed]
        extensions = ["gz"]
        dir = "~/gz"

        [categories.video]
        extensions = ["MP4", ".mkv"]
        media-types = ["video/*"]
        dir = "$HOME/Videos"

        [categories.archives]
        extensions = ["zip", "tar.gz"]
        dir = "Archives"
        """

    /// The server calls small.bin `movie.mp4`: its name is known only from the answer.
    static func namedMovie(_ server: SampleServer) {
        var faults = SampleServerFaults()
        faults.contentDisposition = "attachment; filename=\"movie.mp4\""
        server.setFaults(faults)
    }

    @Test func aPlainRunPlacesTheFileByTheNameTheServerGives() async throws {
        let home = ConfigTests.Home()
        try home.write(Self.config)
        try await withSampleServer(Self.configuration) { server in
            Self.namedMovie(server)
            let url = server.downloadURL("small.bin")
            let run = try await home.haul(["--plain", url])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.contains("category video: saving in \(home.dir.file("Videos"))"), "\(run.stdout)")
            #expect(try FileDigest.hex(of: home.dir.file("Videos/movie.mp4")) == expectedSHA256(of: Self.small))
            #expect(try Self.mode(home.dir.file("Videos")) == 0o755)
            // Nothing left in the output directory: the part was claimed again in the category's folder.
            #expect((try? FileManager.default.contentsOfDirectory(atPath: home.dir.file("dl"))) ?? [] == [])

            // A directory given on the command line is the user's: the categories do not move it.
            let given = try await home.haul(["--plain", "-o", "mine", url])
            #expect(given.status == 0, "\(given.stderr)")
            #expect(FileManager.default.fileExists(atPath: home.dir.file("mine/movie.mp4")))
            #expect(!FileManager.default.fileExists(atPath: home.dir.file("Videos/movie.1.mp4")))

            // --category none: the output directory; --category NAME: that category's folder.
            let none = try await home.haul(["--plain", "--category", "none", url])
            #expect(none.status == 0, "\(none.stderr)")
            #expect(FileManager.default.fileExists(atPath: home.dir.file("dl/movie.mp4")))
            let forced = try await home.haul(["--plain", "--category", "archives", url])
            #expect(forced.status == 0, "\(forced.stderr)")
            #expect(FileManager.default.fileExists(atPath: home.dir.file("dl/Archives/movie.mp4")))
            let unknown = try await home.haul(["--plain", "--category", "music", url])
            #expect(unknown.status == 2)
            #expect(unknown.stderr == "haul: --category music: the config file has no [categories.music] (it has compressed, video, archives; or none)\n")

            server.setFaults(SampleServerFaults())
            // tar.gz is the archives' (a folder relative to the output directory), not compressed's gz.
            let archive = try await home.haul(["--plain", server.downloadURL("clip.tar.gz")])
            #expect(archive.status == 0, "\(archive.stderr)")
            #expect(try FileDigest.hex(of: home.dir.file("dl/Archives/clip.tar.gz")) == expectedSHA256(of: Self.archive))
            #expect(!FileManager.default.fileExists(atPath: home.dir.file("gz")))
        }
    }

    @Test func theCategorysFolderIsNeverReachedThroughALink() async throws {
        let home = ConfigTests.Home()
        try home.write(Self.config)
        let elsewhere = TempDirectory()
        try FileManager.default.createSymbolicLink(atPath: home.dir.file("Videos"), withDestinationPath: elsewhere.path)
        try await withSampleServer(Self.configuration) { server in
            Self.namedMovie(server)
            let run = try await home.haul(["--plain", server.downloadURL("small.bin")])
            #expect(run.status == 3, "\(run.stdout) \(run.stderr)")
            #expect(elsewhere.listing().isEmpty, "nothing written through the link")
        }
    }

    @Test func theServicePlacesWhatHaulAddGivesAndKeepsTheCategoryAcrossARestart() async throws {
        let home = ConfigTests.Home()
        try home.write(Self.config)
        try await withSampleServer(Self.configuration) { server in
            Self.namedMovie(server)
            let add = try await home.haul(["add", server.downloadURL("small.bin")])
            #expect(add.status == 0, "\(add.stderr)")
            try await SessionTests.waitFor("the download to finish", home.service) { seen in
                seen.values.contains { $0.state == .done }
            }
            #expect(try FileDigest.hex(of: home.dir.file("Videos/movie.mp4")) == expectedSHA256(of: Self.small))
            try await Self.expectListed(home, file: home.dir.file("Videos/movie.mp4"))

            let stop = try await home.haul(["service", "stop"])
            #expect(stop.status == 0, "\(stop.stderr)")
            try await SessionTests.waitUntilStopped(home.service)
            // A new service reads it from its store.
            try await Self.expectListed(home, file: home.dir.file("Videos/movie.mp4"))
        }
    }

    /// aria2's face: a download added without `dir` goes to its category's folder, which `tellStatus` gives as
    /// `dir`; one added with `dir` stays there.
    @Test func aria2sDirIsTheCategorysFolderUnlessItGaveOne() async throws {
        let config = TempDirectory()
        try Data("""
            [categories.video]
            extensions = ["mp4"]
            dir = "Videos"
            """.utf8).write(to: URL(fileURLWithPath: config.file("config.toml")))
        let rpc = try await RPCService.start(["--config", config.file("config.toml")])
        try await withSampleServer(Self.configuration) { server in
            Self.namedMovie(server)
            for (options, directory) in [([String: String](), rpc.dir.file("dl/Videos")),
                                         (["dir": rpc.dir.file("more")], rpc.dir.file("more"))] {
                let added = try await rpc.call("aria2.addUri", [[server.downloadURL("small.bin")], options])
                let gid = try #require(added.result as? String, "\(added.body)")
                try await SessionTests.waitFor("the download to finish", rpc.home) { seen in
                    seen.values.filter { $0.state == .done }.count == (options.isEmpty ? 1 : 2)
                }
                let status = try #require(try await rpc.call("aria2.tellStatus", [gid, ["dir", "files"]]).result
                    as? [String: Any])
                #expect(status["dir"] as? String == directory)
                let path = ((status["files"] as? [[String: Any]])?.first?["path"] as? String)
                #expect(path == directory + "/movie.mp4")
                #expect(FileManager.default.fileExists(atPath: directory + "/movie.mp4"))
            }
        }
    }

    static func expectListed(_ home: ConfigTests.Home, file: String) async throws {
        let list = try await home.haul(["ls", "--json"])
        #expect(list.status == 0, "\(list.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        #expect(rows.count == 1)
        #expect(rows.first?["fileCategory"] as? String == "video", "\(list.stdout)")
        #expect(rows.first?["file"] as? String == file)
        let table = try await home.haul(["ls"])
        #expect(table.stdout.contains("movie.mp4 [video]"), "\(table.stdout)")
    }

    static func mode(_ path: String) throws -> Int {
        ((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1) & 0o777
    }

    /// A bad category: one line naming the file, the line and the key; exit 2, nothing downloaded.
    @Test(arguments: [
        ("[categories.video]\nextensions = [\"mp4\"]\ndir = \"\"\n", "1: categories.video.dir: empty: name the folder of its downloads"),
        ("jobs = 2\n[categories.video]\nextensions = [\"mp4\"]\nfolder = \"~/V\"\n", "2: categories.video.folder: unknown key (a category takes extensions, media-types and dir)"),
        ("[categories.video]\nextensions = [\"mp4\", 4]\ndir = \"~/V\"\n", "1: categories.video.extensions: takes a list of strings, not one with integer"),
        ("[categories.video]\nmedia-types = [\"video\"]\ndir = \"~/V\"\n", "1: categories.video.media-types: \"video\" is not a media type (like \"video/mp4\" or \"video/*\")"),
        ("[categories.video]\nextensions = [\"mp4\"]\ndir = 3\n", "1: categories.video.dir: takes a string, not integer"),
        ("[categories.video]\nextensions = [\"mp4\"]\n", "1: categories.video.dir: missing: the folder of its downloads"),
        ("categories = 3\n", "1: categories: a table of categories ([categories.NAME])"),
    ])
    func aBadCategoryIsOneLineNamingTheKey(text: String, expected: String) async throws {
        let home = ConfigTests.Home()
        try home.write(text)
        for arguments in [["--plain", "http://127.0.0.1:1/x.bin"], ["ls"], ["service", "start"]] {
            let exit = try await home.haul(arguments)
            #expect(exit.status == 2, "\(arguments)")
            #expect(exit.stderr == "haul: \(home.configPath):\(expected)\n", "\(arguments)")
        }
        #expect(!FileManager.default.fileExists(atPath: home.service.socket), "no service was started")
    }
}
