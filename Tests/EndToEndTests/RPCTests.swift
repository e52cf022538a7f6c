import Foundation
import HaulCore
import HaulService
import SampleServer
import Testing
import TestSupport

/// A haul service with its aria2 JSON-RPC face on, for one test: its URL and secret.
struct RPCService {
    let home = ServiceHome()
    let dir = TempDirectory()
    var url = ""
    var secret = ""
    var pid = 0

    /// With the aria2 face on, a service waits for front ends and never leaves by itself unless told: a test
    /// process that dies before its homes stop their services (a sanitizer's abort) would leave them running.
    /// Idle for this many seconds, they go (no test here idles that long).
    static let idleExit = "300"

    /// Downloads go to `dir/dl`; `dir/more` is a second allowed root.
    static func start(_ extra: [String] = []) async throws -> RPCService {
        var service = RPCService()
        try FileManager.default.createDirectory(atPath: service.dir.file("dl"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: service.dir.file("more"), withIntermediateDirectories: true)
        let start = try await HaulProcess.run(
            ["service", "start", "--json", "--rpc-listen", "127.0.0.1:0", "--output-dir", service.dir.file("dl"),
             "--rpc-allowed-dir", service.dir.file("dl"), "--rpc-allowed-dir", service.dir.file("more"),
             "--idle-exit", Self.idleExit] + extra,
            in: service.dir.path, environment: service.home.environment)
        #expect(start.status == 0, "\(start.stderr)")
        let status = try #require(try JSONSerialization.jsonObject(with: Data(start.stdout.utf8)) as? [String: Any])
        let rpc = try #require(status["rpc"] as? [String: Any], "\(start.stdout)")
        service.url = try #require(rpc["url"] as? String)
        service.pid = try #require(status["pid"] as? Int)
        let secretFile = try #require(rpc["secretFile"] as? String)
        service.secret = try String(contentsOfFile: secretFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return service
    }

    struct Answer {
        var status: Int
        var body: [String: Any]
        var headers: String

        var result: Any? { body["result"] }
        var errorCode: Int? { (body["error"] as? [String: Any])?["code"] as? Int }
        var errorMessage: String? { (body["error"] as? [String: Any])?["message"] as? String }
    }

    /// POSTs `body` with curl (a real HTTP client, so the headers are what a client sends).
    func post(_ body: String, headers: [String] = [], method: String = "POST") async throws -> Answer {
        let bodyFile = dir.file("body-\(UUID().uuidString)")
        try Data(body.utf8).write(to: URL(fileURLWithPath: bodyFile))
        return try await curl(["-X", method, "--data-binary", "@" + bodyFile] + headers.flatMap { ["-H", $0] }, url)
    }

    func curl(_ arguments: [String], _ target: String) async throws -> Answer {
        let out = dir.file("reply-\(UUID().uuidString)")
        let head = out + ".headers"
        let run = try await runProcess(["/usr/bin/curl", "-s", "-o", out, "-D", head, "-w", "%{http_code}"] + arguments + [target])
        let body = (try? Data(contentsOf: URL(fileURLWithPath: out))) ?? Data()
        let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
        let headers = (try? String(contentsOfFile: head, encoding: .utf8)) ?? ""
        return Answer(status: Int(run.output.suffix(3)) ?? 0, body: object, headers: headers)
    }

    /// One call with the secret.
    func call(_ method: String, _ params: [Any] = [], id: Any = 1) async throws -> Answer {
        let document: [String: Any] = ["jsonrpc": "2.0", "id": id, "method": method, "params": ["token:" + secret] + params]
        return try await post(String(decoding: try JSONSerialization.data(withJSONObject: document), as: UTF8.self))
    }

    /// The service still answers, with the secret.
    func stillAnswers() async throws -> Bool {
        let version = try await call("aria2.getVersion")
        return version.status == 200 && (version.result as? [String: Any])?["version"] != nil
    }

    /// The service's stdout and stderr (a sanitizer's report lands here too), for a failure's message.
    var log: String { (try? String(contentsOfFile: home.path + "/service.log", encoding: .utf8)) ?? "(no service.log)" }

    func haul(_ arguments: [String]) async throws -> HaulProcess.Exit {
        try await HaulProcess.run(arguments, in: dir.path, environment: home.environment)
    }
}

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

extension RPCService {
    /// The same home, started again (a new port).
    static func restart(_ old: RPCService) async throws -> RPCService {
        var service = old
        let start = try await old.haul(["service", "start", "--json", "--rpc-listen", "127.0.0.1:0",
                                        "--output-dir", old.dir.file("dl"), "--rpc-allowed-dir", old.dir.file("dl"),
                                        "--rpc-allowed-dir", old.dir.file("more"), "--idle-exit", idleExit])
        let status = try #require(try JSONSerialization.jsonObject(with: Data(start.stdout.utf8)) as? [String: Any])
        service.url = try #require((status["rpc"] as? [String: Any])?["url"] as? String)
        return service
    }
}

/// Issue 72: the aria2 face under front ends and clients that misbehave.
@Suite(.serialized) struct RPCAbuseTests {
    static let python = Aria2ClientTests.venv + "python"
    static let rawSocket = Aria2ClientTests.root + "/Tests/Aria2Clients/rawsocket.py"

    /// Polls `body` until it gives a value, for at most `seconds`.
    static func poll<T>(_ what: String, within seconds: Double = 120, _ body: () async throws -> T?) async throws -> T {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while true {
            if let value = try await body() { return value }
            guard ContinuousClock.now < deadline else { throw HaulError(.other, "timed out waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// 11 wrong secrets sent as another user (`nobody`, from 127.0.0.1 as every local client) are refused,
    /// the last with 429; the owner's right secret is answered at once all the same (it was 429 for a minute).
    @Test func wrongSecretsFromAnotherUserDoNotLockTheOwnerOut() async throws {
        let rpc = try await RPCService.start()
        let wrong = #"{"jsonrpc":"2.0","id":1,"method":"aria2.getVersion","params":["token:stale"]}"#
        var statuses: [Int] = []
        for _ in 0...SecretGateLimit.limit {
            let run = try await runProcess(["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                                            "/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                            "--data-binary", wrong, rpc.url])
            statuses.append(Int(run.output.suffix(3)) ?? 0)
        }
        #expect(statuses.dropLast().allSatisfy { $0 == 400 } && statuses.last == 429, "\(statuses)")
        let right = try await rpc.call("aria2.getVersion")
        #expect(right.status == 200 && (right.result as? [String: Any])?["version"] as? String == "1.36.0",
                "the owner's right secret: \(right.status) \(right.body)")
        // The wrong ones stay refused.
        #expect(try await rpc.post(wrong).status == 429)
        #expect(try await rpc.haul(["service", "stop"]).status == 0)
    }

    /// `bitfield` is built from the completed ranges `NAME.part.json` records: a segmented download shows its
    /// holes while it runs and once paused, and all ones when complete.
    @Test func theBitfieldFollowsTheCompletedRanges() async throws {
        let rpc = try await RPCService.start()
        let mib: Int64 = 1 << 20
        // 1 MiB/s a connection, 4 connections: medium.bin (20 pieces) takes about 5 s.
        try await withSampleServer(rate: 1 << 20) { server in
            let added = try await rpc.call("aria2.addUri", [[server.downloadURL("medium.bin")],
                                                            ["out": "bits.bin", "split": "4", "max-connection-per-server": "4"]])
            let gid = try #require(added.result as? String, "\(added.body)")
            let state = rpc.dir.file("dl/bits.bin.part.json")
            func ranges() -> [ByteRange] {
                guard let data = FileManager.default.contents(atPath: state),
                    let decoded = try? JSONDecoder().decode(ResumeState.self, from: data)
                else { return [] }
                return decoded.completed
            }
            func status() async throws -> [String: Any] {
                let answer = try await rpc.call("aria2.tellStatus", [gid, ["status", "bitfield", "numPieces", "completedLength"]])
                return try #require(answer.result as? [String: Any], "\(answer.body)")
            }

            // Half-done: the ranges only grow, so the bitfield lies between those read before and after it.
            // (A hole of two pieces at least: it cannot close between the reads.)
            let before = try await Self.poll("a hole of two pieces on disk") { () -> [ByteRange]? in
                let now = ranges()
                let done = Self.pieces(now, total: 20 * mib)
                return done.contains { $0 >= 2 && !done.contains($0 - 1) && !done.contains($0 - 2) } ? now : nil
            }
            let running = try await status()
            let after = ranges()
            let bits = try #require(running["bitfield"] as? String, "\(running)")
            #expect(running["numPieces"] as? String == "20")
            #expect(Self.pieces(bits, 20).isSuperset(of: Self.pieces(before, total: 20 * mib)), "\(bits) \(before)")
            #expect(Self.pieces(bits, 20).isSubset(of: Self.pieces(after, total: 20 * mib)), "\(bits) \(after)")
            #expect(Self.hasHole(bits, 20), "a segmented download shows its holes: \(bits)")

            // Paused: exactly the ranges on disk.
            #expect(try await rpc.call("aria2.pause", [gid]).result as? String == gid)
            let paused = try await Self.poll("the pause") { () -> [String: Any]? in
                let now = try await status()
                return now["status"] as? String == "paused" ? now : nil
            }
            let pausedBits = try #require(paused["bitfield"] as? String)
            #expect(Self.pieces(pausedBits, 20) == Self.pieces(ranges(), total: 20 * mib), "\(pausedBits) \(ranges())")
            #expect(Self.hasHole(pausedBits, 20), "\(pausedBits)")
            #expect(!Self.pieces(pausedBits, 20).isEmpty)

            // Complete: all ones for 20 pieces, the padding bits zero.
            #expect(try await rpc.call("aria2.unpause", [gid]).result as? String == gid)
            let done = try await Self.poll("the download to complete") { () -> [String: Any]? in
                let now = try await status()
                return now["status"] as? String == "complete" ? now : nil
            }
            #expect(done["bitfield"] as? String == "fffff0", "\(done)")
            // The lists carry it too.
            let stopped = try await rpc.call("aria2.tellStopped", [0, 10, ["gid", "bitfield"]])
            #expect((stopped.result as? [[String: Any]])?.first?["bitfield"] as? String == "fffff0", "\(stopped.body)")
        }
        #expect(try await rpc.haul(["service", "stop"]).status == 0)
    }

    /// A paused download's `completedLength` is the bytes its part holds (the ranges its state records), so
    /// that the resume asks the server from there: it said 1310720 where the part held 1359872, the offset
    /// the resume then asked for. Over one connection, paused three times.
    @Test func aPausedDownloadsCompletedLengthIsWhatItsPartHolds() async throws {
        let rpc = try await RPCService.start()
        try await withSampleServer(rate: 1 << 20) { server in
            let added = try await rpc.call("aria2.addUri", [[server.downloadURL("medium.bin")], ["out": "exact.bin"]])
            let gid = try #require(added.result as? String, "\(added.body)")
            let state = rpc.dir.file("dl/exact.bin.part.json")
            func status() async throws -> [String: Any] {
                let answer = try await rpc.call("aria2.tellStatus", [gid, ["status", "completedLength"]])
                return try #require(answer.result as? [String: Any], "\(answer.body)")
            }
            var last: Int64 = 0
            for round in 0..<3 {
                _ = try await Self.poll("bytes past \(last) (round \(round))") { () -> Bool? in
                    let now = try await status()
                    return (now["completedLength"] as? String).flatMap { Int64($0) }.map { $0 > last + 300_000 } == true ? true : nil
                }
                #expect(try await rpc.call("aria2.pause", [gid]).result as? String == gid)
                // Paused at once; the part's last checkpoint follows as the download's task ends: the two agree
                // once it has, and stay so (before the fix the record stayed short of the part for good).
                var seen = ""
                let agreed = try await Self.poll("completedLength and the part to agree (round \(round))", within: 30) { () -> Int64? in
                    let now = try await status()
                    guard now["status"] as? String == "paused",
                        let data = FileManager.default.contents(atPath: state),
                        let onDisk = try? JSONDecoder().decode(ResumeState.self, from: data).completedBytes
                    else { return nil }
                    seen = "completedLength \(now["completedLength"] ?? "none"), the part \(onDisk)"
                    return (now["completedLength"] as? String).flatMap { Int64($0) } == onDisk ? onDisk : nil
                }
                #expect(agreed > last, "round \(round): \(seen)")
                last = agreed
                #expect(try await rpc.call("aria2.unpause", [gid]).result as? String == gid)
            }
        }
        #expect(try await rpc.haul(["service", "stop"]).status == 0)
    }

    /// The pieces whose bit is set in a hex bitfield.
    static func pieces(_ hex: String, _ count: Int) -> Set<Int> {
        let bytes = Array(hex.utf8)
        var set: Set<Int> = []
        for piece in 0..<count where piece / 4 < bytes.count {
            let digit = Int(String(UnicodeScalar(bytes[piece / 4])), radix: 16) ?? 0
            if digit & (8 >> (piece % 4)) != 0 { set.insert(piece) }
        }
        return set
    }

    /// The 1 MiB pieces wholly inside `ranges`.
    static func pieces(_ ranges: [ByteRange], total: Int64) -> Set<Int> {
        let mib: Int64 = 1 << 20
        var set: Set<Int> = []
        for piece in 0..<Int((total + mib - 1) / mib) {
            let start = Int64(piece) * mib, end = Swift.min(start + mib, total)
            if ranges.contains(where: { $0.start <= start && $0.end >= end }) { set.insert(piece) }
        }
        return set
    }

    /// A piece not done before one that is.
    static func hasHole(_ hex: String, _ count: Int) -> Bool {
        let set = pieces(hex, count)
        guard let last = set.max() else { return false }
        return (0..<last).contains { !set.contains($0) }
    }

    /// A text frame that is not UTF-8 closes the WebSocket with 1007 (RFC 6455); it was answered as a call
    /// (its bytes replaced), the connection left open.
    @Test func aTextFrameThatIsNotUTF8ClosesWith1007() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.python), "make pydeps")
        let rpc = try await RPCService.start()
        let port = try #require(URLComponents(string: rpc.url)?.port)
        let run = try await runProcess([Self.python, Self.rawSocket, "badutf8", "--port", String(port)])
        let line = try #require(run.output.split(separator: "\n").last, "\(run.output)")
        let seen = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(run.output)")
        #expect(seen["close"] as? Int == 1007, "\(seen)")
        #expect(seen["texts"] as? Int == 0, "no reply to it: \(seen)")
        #expect(try await rpc.stillAnswers())
        #expect(try await rpc.haul(["service", "stop"]).status == 0)
    }

    /// Calls sent over a WebSocket without reading a reply: the service stops taking them once replies wait
    /// (the client's socket fills), its memory stays bounded (it grew by hundreds of MiB, and stayed so after
    /// the client went), and it answers other clients meanwhile.
    @Test func aWebSocketThatDoesNotReadIsThrottled() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.python), "make pydeps")
        let rpc = try await RPCService.start()
        let port = try #require(URLComponents(string: rpc.url)?.port)
        // 300 waiting downloads: each tellWaiting reply is some 200 KiB.
        for batch in 0..<3 {
            let calls = (0..<100).map { index in
                #"{"jsonrpc":"2.0","id":\#(index),"method":"aria2.addUri","params":["token:\#(rpc.secret)","#
                    + #"["http://127.0.0.1:9/waiting-\#(batch)-\#(index).bin"],{"pause":"true"}]}"#
            }
            let added = try await rpc.post("[" + calls.joined(separator: ",") + "]")
            #expect(added.status == 200)
        }
        let run = try await runProcess([Self.python, Self.rawSocket, "flood", "--port", String(port), "--secret", rpc.secret,
                                        "--pid", String(rpc.pid), "--calls", "5000", "--pad", "4096"])
        let line = try #require(run.output.split(separator: "\n").last, "\(run.output)")
        let seen = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(run.output)")
        let before = try #require(seen["before"] as? Int), during = try #require(seen["during"] as? Int)
        let after = try #require(seen["after"] as? Int)
        #expect(seen["throttled"] as? Bool == true, "the service took every call: \(seen)")
        #expect(during - before < 100 << 10, "VmRSS \(before) -> \(during) KiB while flooded: \(seen)")
        #expect(after - before < 100 << 10, "VmRSS \(before) -> \(after) KiB after the client went: \(seen)")
        #expect(seen["otherAnswered"] as? Bool == true && seen["otherAnsweredAfter"] as? Bool == true, "\(seen)")
        #expect(try await rpc.stillAnswers(), "the service's log:\n\(rpc.log)")
        #expect(try await rpc.haul(["service", "stop"]).status == 0)
    }
}

/// The wrong-secret limit a minute, as SPEC.md sets it.
enum SecretGateLimit {
    static let limit = 10
}
