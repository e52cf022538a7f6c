import Foundation
import HaulCore
import HaulService
import SampleServer
import Testing
import TestSupport

@Suite(.serialized) struct RPCTests {
    @Test func hostileRequestsAreRefusedAndTheServiceGoesOn() async throws {
        let rpc = try await RPCService.start()
        try await withSampleServer { server in
            let add = { (options: String) in
                #"{"jsonrpc":"2.0","id":"x","method":"aria2.addUri","params":["token:\#(rpc.secret)",["\#(server.downloadURL("small.bin"))"],\#(options)]}"#
            }
            // DNS rebinding: the right secret from a page whose name points here.
            let rebound = try await rpc.post(add("{}"), headers: ["Host: evil.example"])
            #expect(rebound.status == 403)
            #expect(try await rpc.stillAnswers())
            // A web page, even one that learned the secret.
            let page = try await rpc.post(add("{}"), headers: ["Origin: https://evil.example"])
            #expect(page.status == 403)
            let preflight = try await rpc.post("", headers: ["Origin: https://evil.example",
                                                             "Access-Control-Request-Method: POST"], method: "OPTIONS")
            #expect(preflight.status == 403)
            // A browser extension is let in, with the CORS answer aria2 gives.
            let extensionPreflight = try await rpc.post("", headers: [
                "Origin: chrome-extension://abcdef", "Access-Control-Request-Method: POST",
                "Access-Control-Request-Headers: content-type"], method: "OPTIONS")
            #expect(extensionPreflight.status == 200)
            let lowered = extensionPreflight.headers.lowercased()
            #expect(lowered.contains("access-control-allow-origin: chrome-extension://abcdef"))
            #expect(lowered.contains("access-control-allow-methods: post, get, options"))
            #expect(lowered.contains("access-control-allow-headers: content-type"))
            #expect(lowered.contains("vary: origin"))

            // The WebSocket upgrade: refused for a page, taken for a script (101, Switching Protocols).
            let upgrade = ["-m", "5", "-H", "Connection: Upgrade", "-H", "Upgrade: websocket",
                           "-H", "Sec-WebSocket-Version: 13", "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]
            // (A declined upgrade is answered 400 by the WebSocket upgrader, before any route.)
            #expect(try await rpc.curl(upgrade + ["-H", "Origin: https://evil.example"], rpc.url).status == 400)
            #expect(try await rpc.curl(upgrade + ["-H", "Host: evil.example"], rpc.url).status == 400)
            #expect(try await rpc.curl(upgrade + ["-H", "Origin: moz-extension://1234"], rpc.url).status == 101)
            #expect(try await rpc.stillAnswers(), "the service's log:\n\(rpc.log)")

            // Paths: `out` is one name, `dir` lies under an allowed root.
            for options in [#"{"out":"../x"}"#, #"{"out":"a/b"}"#, #"{"dir":"/etc"}"#, #"{"dir":"\#(rpc.dir.path)"}"#,
                            #"{"dir":"\#(rpc.dir.file("dl"))/../.."}"#] {
                let refused = try await rpc.post(add(options))
                #expect(refused.status == 400 && refused.errorCode == 1, "\(options): \(refused.body)")
                #expect(try await rpc.stillAnswers())
            }
            // Bounded bodies and batches.
            let huge = try await rpc.post(String(repeating: " ", count: 10 << 20) + "{}")
            #expect(huge.status == 413)
            #expect(try await rpc.stillAnswers(), "the service's log:\n\(rpc.log)")
            let batch = "[" + Array(repeating: #"{"method":"system.listMethods","id":1}"#, count: 101).joined(separator: ",") + "]"
            #expect(try await rpc.post(batch).errorCode == -32600)
            // Malformed, unknown, no secret.
            let garbage = try await rpc.post("{\"method\":")
            #expect(garbage.status == 400 && garbage.errorCode == -32700)
            let unknown = try await rpc.call("aria2.noSuchThing")
            #expect(unknown.status == 404 && unknown.errorCode == -32601)
            let anonymous = try await rpc.post(#"{"jsonrpc":"2.0","id":1,"method":"aria2.tellActive","params":[]}"#)
            #expect(anonymous.status == 400 && anonymous.errorMessage == "Unauthorized")
            let torrent = try await rpc.call("aria2.addTorrent", ["ZGF0YQ=="])
            #expect(torrent.status == 400 && torrent.errorCode == 1)
            #expect(try await rpc.stillAnswers())

            // Nothing of the above was added or written.
            let listed = try await rpc.haul(["ls", "--json"])
            #expect(listed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]", "\(listed.stdout)")
            #expect(!FileManager.default.fileExists(atPath: rpc.dir.file("x")))

            // No secret in any process's arguments.
            for entry in try FileManager.default.contentsOfDirectory(atPath: "/proc") where Int(entry) != nil {
                guard let arguments = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { continue }
                #expect(!String(decoding: arguments, as: UTF8.self).contains(rpc.secret), "process \(entry)")
            }
            let refusedOnCommandLine = try await rpc.haul(["service", "start", "--rpc-listen", "127.0.0.1:0",
                                                           "--rpc-secret", "s3cret"])
            #expect(refusedOnCommandLine.status == 2 && refusedOnCommandLine.stderr.contains("--rpc-secret-file"),
                    "\(refusedOnCommandLine)")
            let remote = try await rpc.haul(["service", "start", "--rpc-listen", "0.0.0.0:0"])
            #expect(remote.status == 2 && remote.stderr.contains("--rpc-allow-remote"), "\(remote)")
        }
    }

    /// `--rpc-certificate`/`--rpc-private-key`: HTTPS and WSS (aria2's `--rpc-secure`), driven by aria2p's
    /// client (over `requests`) and by aiohttp's WebSocket (aioaria2's transport); plain HTTP gets nothing.
    @Test func aCertificateMakesItHTTPSAndWSS() async throws {
        let keys = TempDirectory()
        let (cert, key) = (keys.file("cert.pem"), keys.file("key.pem"))
        let made = try await runProcess(["/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                                         "-out", cert, "-days", "2", "-subj", "/CN=localhost",
                                         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        try #require(made.status == 0, "\(made.output)")
        chmod(key, 0o644)
        let open = try await RPCService().haul(["service", "start", "--rpc-listen", "127.0.0.1:0",
                                                "--rpc-certificate", cert, "--rpc-private-key", key])
        #expect(open.status == 2)
        #expect(open.stderr == "haul: --rpc-private-key \(key) may be read by other users; `chmod 600` it\n")
        chmod(key, 0o600)

        let rpc = try await RPCService.start(["--rpc-certificate", cert, "--rpc-private-key", key])
        #expect(rpc.url.hasPrefix("https://127.0.0.1:"), "\(rpc.url)")
        let body = #"{"jsonrpc":"2.0","id":7,"method":"aria2.getVersion","params":["token:\#(rpc.secret)"]}"#
        let https = try await rpc.curl(["--cacert", cert, "--data-binary", body], rpc.url)
        #expect(https.status == 200 && (https.result as? [String: Any])?["version"] != nil)
        let plain = try await rpc.curl(["--data-binary", body], rpc.url.replacingOccurrences(of: "https://", with: "http://"))
        #expect(plain.status == 0, "no HTTP answer on the TLS port")

        let python = Aria2ClientTests.venv + "python"
        try #require(FileManager.default.isExecutableFile(atPath: python), "make pydeps")
        let port = rpc.url.split(separator: ":")[2].split(separator: "/")[0]
        let script = """
            import asyncio, json, ssl, sys, aiohttp, aria2p
            url, cafile, secret, port = sys.argv[1:5]
            api = aria2p.API(aria2p.Client(host="https://127.0.0.1", port=int(port), secret=secret))
            print("aria2p", api.client.get_version()["version"])
            async def ws():
                context = ssl.create_default_context(cafile=cafile)
                async with aiohttp.ClientSession() as session:
                    async with session.ws_connect(url.replace("https://", "wss://"), ssl=context) as socket:
                        await socket.send_str(json.dumps({"jsonrpc": "2.0", "id": "w", "method": "aria2.getVersion",
                                                          "params": ["token:" + secret]}))
                        reply = json.loads((await socket.receive(timeout=60)).data)
                        print("wss", reply["id"], reply["result"]["version"])
            asyncio.run(ws())
            """
        let run = try await runProcess([python, "-c", script, rpc.url, cert, rpc.secret, String(port)],
                                       environment: ["REQUESTS_CA_BUNDLE": cert])
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("aria2p 1.36.0"), "\(run.output)")
        #expect(run.output.contains("wss w 1.36.0"), "\(run.output)")
        #expect(try await rpc.haul(["service", "stop"]).status == 0)
    }

    /// One model, two faces: what a front end does over the RPC shows in an attached `haul` screen, and
    /// what the screen does shows over the RPC.
    @Test func anAttachedScreenAndTheRPCSeeEachOther() async throws {
        let rpc = try await RPCService.start()
        try await withSampleServer(rate: TUITests.slowRate) { server in
            let tmux = try TmuxSession([], in: rpc.dir.path, home: rpc.home)
            try await tmux.waitFor("the screen") { $0.contains { $0.contains("Downloads") } }
            let added = try await rpc.call("aria2.addUri", [[server.downloadURL("medium.bin")], ["out": "from-rpc.bin"]])
            let gid = try #require(added.result as? String, "\(added.body)")
            try await tmux.waitFor("the download added over the RPC") {
                TUITests.row($0, "from-rpc.bin")?.contains("downloading") == true
            }
            // A limit set over the RPC is the row's own limit on the screen, and the screen's change is the RPC's.
            #expect(try await rpc.call("aria2.changeOption", [gid, ["max-download-limit": "512K"]]).result as? String == "OK")
            try tmux.send("Enter")
            try await tmux.waitFor("the RPC's limit in the details") { $0.contains { $0.contains("Limit  512 KiB/s") } }
            try tmux.send("-")
            try await tmux.waitFor("the lower limit") { $0.contains { $0.contains("Limit  256 KiB/s") } }
            let options = try #require(try await rpc.call("aria2.getOption", [gid]).result as? [String: Any])
            #expect(options["max-download-limit"] as? String == "262144", "\(options)")
            try tmux.send("Escape")
            #expect(try await rpc.call("aria2.pause", [gid]).result as? String == gid)
            try await tmux.waitFor("the pause over the RPC") { TUITests.row($0, "from-rpc.bin")?.hasSuffix(" paused") == true }
            try tmux.send("p")
            try await tmux.waitFor("the resume from the screen") {
                TUITests.row($0, "from-rpc.bin")?.contains("downloading") == true
            }
            let status = try await rpc.call("aria2.tellStatus", [gid, ["status"]])
            #expect((status.result as? [String: Any])?["status"] as? String == "active", "\(status.body)")
            try tmux.send("q", "p")
            try await TUITests.expectExit(tmux, 0)
            _ = try await rpc.call("aria2.forceRemove", [gid])
        }
    }

    @Test func wrongSecretsAreLimitedPerPeer() async throws {
        let rpc = try await RPCService.start()
        var statuses: [Int] = []
        for _ in 0..<11 {
            statuses.append(try await rpc.post(#"{"jsonrpc":"2.0","id":1,"method":"aria2.getVersion","params":["token:wrong"]}"#).status)
        }
        #expect(statuses.prefix(10).allSatisfy { $0 == 400 })
        #expect(statuses.last == 429)
        // The limit is per peer and per minute: listing methods needs no secret, as in aria2.
        #expect(try await rpc.post(#"{"jsonrpc":"2.0","id":1,"method":"system.listMethods"}"#).status == 200)
    }

    @Test func bothFacesShowOneQueueAndTheGIDSurvivesARestart() async throws {
        let rpc = try await RPCService.start()
        try await withSampleServer(rate: 1 << 20) { server in
            // Added over RPC: in `haul ls`, with its GID.
            let added = try await rpc.call("aria2.addUri", [[server.downloadURL("medium.bin")],
                                                            ["out": "rpc.bin", "dir": rpc.dir.file("more"),
                                                             "max-download-limit": "512K"]])
            let gid = try #require(added.result as? String)
            #expect(gid.count == 16 && gid.allSatisfy(\.isHexDigit))
            let listed = try #require(try JSONSerialization.jsonObject(with: Data(try await rpc.haul(["ls", "--json"]).stdout.utf8)) as? [[String: Any]])
            #expect(listed.first?["gid"] as? String == gid)
            #expect(listed.first?["file"] as? String == rpc.dir.file("more") + "/rpc.bin")

            // Added with `haul add`: in tellStatus and tellActive/tellWaiting under its own GID.
            let cli = try await rpc.haul(["add", "-o", "cli", server.downloadURL("small.bin")])
            #expect(cli.status == 0, "\(cli.stderr)")
            let both = try #require(try JSONSerialization.jsonObject(with: Data(try await rpc.haul(["ls", "--json"]).stdout.utf8)) as? [[String: Any]])
            let cliGID = try #require(both.last?["gid"] as? String)
            let status = try await rpc.call("aria2.tellStatus", [cliGID, ["gid", "status", "files"]])
            let fields = try #require(status.result as? [String: Any])
            #expect(fields["gid"] as? String == cliGID)
            #expect(Set(fields.keys) == ["gid", "status", "files"])
            #expect(((fields["files"] as? [[String: Any]])?.first?["path"] as? String)?.hasSuffix("/cli/small.bin") == true)

            // Options: the live limit, read back.
            let options = try #require(try await rpc.call("aria2.getOption", [gid]).result as? [String: Any])
            #expect(options["max-download-limit"] as? String == "524288")
            #expect(try await rpc.call("aria2.changeOption", [gid, ["max-download-limit": "0"]]).result as? String == "OK")
            let lifted = try #require(try await rpc.call("aria2.getOption", [gid]).result as? [String: Any])
            #expect(lifted["max-download-limit"] as? String == "0")

            // A unique prefix of a GID is enough, as in aria2.
            let prefix = try await rpc.call("aria2.tellStatus", [String(gid.prefix(6)), ["gid"]])
            #expect((prefix.result as? [String: Any])?["gid"] as? String == gid)

            // The GID is stored: after a restart the same call finds it.
            #expect(try await rpc.haul(["service", "stop"]).status == 0)
            let again = try await RPCService.restart(rpc)
            let after = try await again.call("aria2.tellStatus", [gid, ["gid", "status"]])
            #expect((after.result as? [String: Any])?["gid"] as? String == gid, "\(after.body)")
            _ = try await again.call("aria2.forceRemove", [gid])
            _ = try await again.call("aria2.forceRemove", [cliGID])
        }
    }
}
