import Foundation
import Testing
import TestSupport

/// `haul` is built without the per-user service and the sample server, whose code lengthened every
/// download's start; it hands `service start|run` and `--demo` to `haul-server`, found beside it (a build's
/// products) or in `../libexec/haul/` (where `make install` puts it).
@Suite struct ServerSplitTests {
    /// SQLite (the service's store) and Hummingbird (its socket API, the aria2 face, the sample server) are
    /// `haul-server`'s alone.
    @Test func haulLinksNeitherTheStoreNorTheServers() throws {
        let haul = try Data(contentsOf: URL(fileURLWithPath: HaulProcess.binary), options: .alwaysMapped)
        #expect(haul.range(of: Data("libsqlite3.so".utf8)) == nil)
        #expect(haul.range(of: Data("Hummingbird".utf8)) == nil)
        let server = try Data(contentsOf: URL(fileURLWithPath: HaulProcess.server), options: .alwaysMapped)
        #expect(server.range(of: Data("libsqlite3.so".utf8)) != nil)
    }

    /// `haul` starts without Foundation proper (CoreFoundation, ICU: its modules import FoundationEssentials)
    /// and without libcurl and its thirty libraries, which it loads when a download first needs them, on the
    /// other core while the command line is parsed (docs/benchmarks-history.md, "Thirty-second pass").
    @Test func haulStartsWithoutFoundationOrLibcurl() async throws {
        let haul = try Data(contentsOf: URL(fileURLWithPath: HaulProcess.binary), options: .alwaysMapped)
        // Foundation's symbols, its own types' and its extensions' (`$sSy10FoundationE...`) alike.
        #expect(haul.range(of: Data("10Foundation".utf8)) == nil)
        #expect(haul.range(of: Data("__CFInitialize".utf8)) == nil)
        let root = TempDirectory()
        let needed = try await HaulProcess.run(["-d", HaulProcess.binary], in: root.path, binary: "/usr/bin/readelf")
        #expect(needed.status == 0)
        #expect(needed.stdout.contains("(NEEDED)"))
        #expect(!needed.stdout.contains("libcurl"))
    }

    /// Where libcurl cannot be loaded, a download says so in one line and exits 1, writing nothing.
    @Test func withoutLibcurlADownloadSaysSo() async throws {
        let root = TempDirectory()
        let libraries = root.path + "/lib"
        try FileManager.default.createDirectory(atPath: libraries, withIntermediateDirectories: true)
        try Data("not a library".utf8).write(to: URL(fileURLWithPath: libraries + "/libcurl.so.4"))
        let output = root.path + "/out"
        let run = try await HaulProcess.run(["--no-config", "--plain", "-o", output, "http://127.0.0.1:1/file.bin"],
                                            in: root.path, environment: ["LD_LIBRARY_PATH": libraries])
        #expect(run.status == 1)
        #expect(run.stderr.hasPrefix("haul: cannot load libcurl: "))
        #expect(run.stderr.split(separator: "\n").count == 1)
        #expect(!FileManager.default.fileExists(atPath: output + "/file.bin"))
    }

    /// Without `haul-server`, `service start` and `--demo` say where it was looked for and exit 1, and no
    /// service starts; with it in `../libexec/haul/`, the service runs from it.
    @Test func theServiceAndTheDemoRunInHaulServer() async throws {
        let root = TempDirectory()
        let bin = root.path + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let haul = bin + "/haul"
        do {
            try FileManager.default.linkItem(atPath: HaulProcess.binary, toPath: haul)
        } catch {
            try FileManager.default.copyItem(atPath: HaulProcess.binary, toPath: haul)
        }
        let home = ServiceHome()
        let missing = "haul: cannot find haul-server, which runs the service and --demo (looked for \(bin)/haul-server "
            + "and \(bin)/../libexec/haul/haul-server)\n"
        for arguments in [["service", "start", "--no-config"], ["--no-config", "--demo", "--plain"]] {
            let run = try await HaulProcess.run(arguments, in: root.path, environment: home.environment, binary: haul)
            #expect(run.status == 1, "\(arguments)")
            #expect(run.stderr == missing, "\(arguments)")
        }
        #expect(!FileManager.default.fileExists(atPath: home.socket))

        let libexec = root.path + "/libexec/haul"
        try FileManager.default.createDirectory(atPath: libexec, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: libexec + "/haul-server", withDestinationPath: HaulProcess.server)
        let start = try await HaulProcess.run(["service", "start", "--no-config"], in: root.path,
                                              environment: home.environment, binary: haul)
        #expect(start.status == 0, "\(start.stderr)")
        let pid = try #require(start.stdout.firstMatch(of: /pid (\d+)/).map { String($0.1) })
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
        #expect(URL(fileURLWithPath: executable).resolvingSymlinksInPath().path
                == URL(fileURLWithPath: HaulProcess.server).resolvingSymlinksInPath().path)
    }
}
