import Foundation
import HaulCore
import Testing
import TestSupport

/// Links that expire, signed by Debian's nginx and its secure_link module (a server no one here wrote): the
/// link's `expires` is checked at each request against nginx's own clock, so the test waits for the server to
/// say the link has expired (410), never for a length of time. A download interrupted half-way is run again
/// with its expired link and `--refresh-with` a script that signs a fresh one: haul continues from the bytes on
/// disk, asking nginx for the rest only.
@Suite struct SignedLinkNginxTests {
    static let secret = "haul-test-secret"

    /// nginx answers 403 to a bad signature and 410 to a link past its time; a good one is served from the root,
    /// at 4 MB/s so that the first run is interrupted with most of the file still to come.
    static let block = """
        location /v/ {
          secure_link $arg_md5,$arg_expires;
          secure_link_md5 "$secure_link_expires$uri \(secret)";
          if ($secure_link = "") { return 403; }
          if ($secure_link = "0") { return 410; }
          limit_rate 4m;
          rewrite ^/v/(.*)$ /$1 break;
        }
        """

    /// A script that prints a link to `/v/NAME` on `port` good for `$LIFE` seconds (60 unless set): what a
    /// site's "get a new link" does, with the secret the server shares.
    static func signer(_ dir: TempDirectory, port: Int, name: String) throws -> String {
        let script = dir.file("sign-link")
        try writeScript("""
            #!/bin/sh
            expires=$(( $(date +%s) + ${LIFE:-60} ))
            md5=$(printf '%s' "$expires/v/\(name) \(secret)" | openssl md5 -binary | openssl base64 | tr '+/' '-_' | tr -d '=')
            echo "http://127.0.0.1:\(port)/v/\(name)?md5=$md5&expires=$expires"
            """, to: script)
        return script
    }

    static func status(of url: String) async throws -> String {
        try await runProcess(["/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", url]).output
    }

    @Test func anExpiredNginxLinkIsRefreshedAndTheDownloadContinuesFromItsBytes() async throws {
        let dir = TempDirectory()
        let bytes = expectedBytes("medium.bin")
        let nginx = try await MirrorNginx.start(blocks: [Self.block]) { root, _ in
            try Data(bytes).write(to: URL(fileURLWithPath: root + "/medium.bin"))
        }
        defer { nginx.stop() }
        let script = try Self.signer(dir, port: nginx.ports[0], name: "medium.bin")
        // The first run, interrupted once its state is on disk. Its link lives three seconds; where the machine
        // is so slow that haul asked only after that (410, nothing written), it is signed again for twice as long.
        var short = ""
        for life in [3, 6, 12, 24, 48] {
            short = try await runProcess([script], environment: ["LIFE": String(life)]).output
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let first = try HaulProcess(["--plain", "-s", "1", short], in: dir.path)
            // Its end marked by a file, which the wait below (on the directory's events) sees.
            let exited = dir.file("first-run-ended-\(life)")
            let ended = Task {
                let exit = await first.wait()
                _ = FileManager.default.createFile(atPath: exited, contents: nil)
                return exit
            }
            try await waitForFiles(in: dir.path, "the first run's state, or its end", within: .seconds(60)) {
                FileManager.default.fileExists(atPath: dir.file("medium.bin.part.json"))
                    || FileManager.default.fileExists(atPath: exited)
            }
            if FileManager.default.fileExists(atPath: dir.file("medium.bin.part.json")) {
                first.send(SIGINT)
                let exit = await ended.value
                #expect(exit.status == 130, "\(exit)")
                break
            }
            let exit = await ended.value
            try #require(exit.status == 8 && !FileManager.default.fileExists(atPath: dir.file("medium.bin.part")),
                         "the first run ended otherwise than by an expired link: \(exit)")
        }
        #expect(try await Self.status(of: short.replacingOccurrences(of: "md5=", with: "md5=x")) == "403")
        let kept = try #require(try FileManager.default.attributesOfItem(atPath: dir.file("medium.bin.part"))[.size] as? Int)
        // nginx's clock passes the link's time: polled, a curl a tenth of a second apart.
        _ = try await within(60, "nginx to call the link expired") { [short] () async throws -> Bool in
            while try await Self.status(of: short) != "410" { try await Task.sleep(for: .milliseconds(100)) }
            return true
        }

        // Again with the expired link: 410, the script signs a new one, and the rest comes from where the part is.
        let second = try await HaulProcess.run(["--plain", "-s", "1", "--refresh-with", script, short], in: dir.path)
        #expect(second.status == 0, "\(second)")
        #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        #expect(second.stdout.contains("continuing from"), "\(second.stdout)")
        let requests = nginx.requests()
        #expect(requests.contains { $0.status == 410 }, "\(requests)")
        // No request after the expiry started from the beginning: the resumed one asked from the part's end.
        let resumed = requests.filter { $0.status == 206 }.compactMap { request -> Int? in
            guard request.range.hasPrefix("bytes="), let dash = request.range.firstIndex(of: "-") else { return nil }
            return Int(request.range[request.range.index(request.range.startIndex, offsetBy: 6)..<dash])
        }
        #expect(resumed.contains { $0 > 0 && $0 <= kept }, "\(requests), part \(kept)")
        // (The check of the new link reads a block the part holds, bytes=0-98303 here; the rest is one request.)
        #expect(requests.last?.status == 206 && requests.last?.range.hasPrefix("bytes=0-") == false, "\(requests)")
    }

    /// An address that serves another file now (the same size, other bytes and a newer time: nginx's ETag
    /// changes), as a link that expired into another page does: with `--refresh-with`, haul neither starts over
    /// on the other file nor splices it into the part; the command's address serves the part's file, and the
    /// download continues from its bytes. Without `--refresh-with` the download starts over (the file that is
    /// there now), as before.
    @Test func anAddressThatServesAnotherFileIsRefreshedNotStartedOver() async throws {
        let dir = TempDirectory()
        let original = expectedBytes("medium.bin")
        var replaced = original
        for index in stride(from: 0, to: replaced.count, by: 4096) { replaced[index] ^= 0xFF }
        var root = ""
        let nginx = try await MirrorNginx.start(blocks: ["limit_rate 4m; location /kept/ { alias OTHER/; }"]) { www, other in
            root = www
            for folder in [www, other] { try Data(original).write(to: URL(fileURLWithPath: folder + "/medium.bin")) }
        }
        defer { nginx.stop() }
        // Two parts of the original: one for each run below.
        let other = TempDirectory()
        for folder in [dir, other] {
            try await interrupt(["--plain", "-s", "1", nginx.url(0, "medium.bin")], in: folder, part: "medium.bin.part")
        }
        // The server's file is replaced: other bytes, the same size, a later time.
        try Data(replaced).write(to: URL(fileURLWithPath: root + "/medium.bin"))
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(60)],
                                              ofItemAtPath: root + "/medium.bin")
        let script = dir.file("kept-link")
        try writeScript("#!/bin/sh\necho '\(nginx.url(0, "kept/medium.bin"))'\n", to: script)

        let second = try await HaulProcess.run(["--plain", "-s", "1", "--refresh-with", script, nginx.url(0, "medium.bin")],
                                               in: dir.path)
        #expect(second.status == 0, "\(second)")
        #expect(try FileDigest.hex(of: dir.file("medium.bin")) == expectedSHA256("medium.bin"))
        #expect(second.stdout.contains("continuing from"), "\(second.stdout)")

        // Without it: the file there now, fetched whole.
        let fresh = try await HaulProcess.run(["--plain", "-s", "1", nginx.url(0, "medium.bin")], in: other.path)
        #expect(fresh.status == 0, "\(fresh)")
        #expect(try FileDigest.hex(of: other.file("medium.bin")) == FileDigest.hex(of: root + "/medium.bin"))
        #expect(fresh.stdout.contains("starting over") || fresh.stderr.contains("starting over"), "\(fresh)")
    }
}
