import Foundation
@testable import HaulCore
@testable import HaulService
import Testing
import TestSupport

/// The aria2 JSON-RPC face's pieces without a socket: the JSON it reads and writes, requests, options,
/// paths, the Host and Origin policy, the secret and the wrong-secret limiter.
struct RPCProtocolTests {
    // MARK: JSON

    @Test func idsComeBackInTheirOwnType() {
        for (id, text) in [(JSON.int(0), "0"), (.string("q1"), "\"q1\""), (.double(1.5), "1.5"), (.null, "null")] {
            let body = #"{"jsonrpc":"2.0","id":\#(text),"method":"system.listMethods"}"#
            guard case .single(.success(let call)) = JSONRPC.request(body: Array(body.utf8)) else {
                Issue.record("not a call: \(body)")
                continue
            }
            #expect(call.id == id)
            #expect(JSONRPC.reply(.success("OK"), id: call.id).text == #"{"id":\#(text),"jsonrpc":"2.0","result":"OK"}"#)
        }
    }

    /// An integer id past 64 bits comes back digit for digit, not as a rounded double
    /// (`1.8446744073709552e+19`), which a client would not match to its call.
    @Test(arguments: ["18446744073709551615", "-9223372036854775809", "123456789012345678901234567890"])
    func aHugeIntegerIdIsEchoedExactly(text: String) {
        let body = #"{"jsonrpc":"2.0","id":\#(text),"method":"system.listMethods"}"#
        guard case .single(.success(let call)) = JSONRPC.request(body: Array(body.utf8)) else {
            Issue.record("not a call: \(body)")
            return
        }
        #expect(JSONRPC.reply(.success("OK"), id: call.id).text == #"{"id":\#(text),"jsonrpc":"2.0","result":"OK"}"#)
    }

    @Test func stringsAreEscaped() {
        let value: JSON = ["a\"b": .string("line\nnext\ttab\\ \u{1} é")]
        #expect(value.text == #"{"a\"b":"line\nnext\ttab\\ \u0001 é"}"#)
        #expect(JSON.parse(Array(value.text.utf8)) == value)
    }

    @Test func malformedRequestsGetJSONRPCErrors() {
        func single(_ body: String) -> JSONRPC.Failure? {
            if case .single(.failure(let failure)) = JSONRPC.request(body: Array(body.utf8)) { return failure }
            return nil
        }
        #expect(single("{not json") == .parse)
        #expect(single("{not json")?.httpStatus == 400)
        #expect(single(#"{"id":1}"#) == .invalidRequest)
        // The id of a request that is not a call is echoed, as aria2 1.36 does (it answered null before).
        #expect(single(#"{"id":1}"#)?.id == .int(1))
        #expect(single(#"{"id":"abc","method":5}"#)?.id == .string("abc"))
        // Params that are not an array: aria2's -32602, with the id.
        #expect(single(#"{"method":"aria2.tellActive","params":{"a":1},"id":"k"}"#) == .invalidParams)
        #expect(single(#"{"method":"aria2.tellActive","params":{"a":1},"id":"k"}"#)?.id == .string("k"))
        #expect(single("[]") == .invalidRequest)
        let tooMany = "[" + Array(repeating: #"{"method":"system.listMethods"}"#, count: 101).joined(separator: ",") + "]"
        #expect(single(tooMany) == .invalidRequest)
        #expect(JSONRPC.Failure.methodNotFound.httpStatus == 404)
        // No "jsonrpc" key, or a numeric one: accepted, as aria2 accepts them.
        guard case .single(.success(let call)) = JSONRPC.request(body: Array(#"{"jsonrpc":2,"method":"m"}"#.utf8)) else {
            Issue.record("a numeric jsonrpc key is refused")
            return
        }
        #expect(call.method == "m" && call.params.isEmpty && call.id == .null)
    }

    @Test func aBatchKeepsEachCallOnItsOwn() {
        let body = #"[{"method":"a","id":1},{"id":2},{"method":"b","params":["x"],"id":"3"}]"#
        guard case .batch(let calls) = JSONRPC.request(body: Array(body.utf8)) else {
            Issue.record("not a batch")
            return
        }
        #expect(calls.count == 3)
        #expect((try? calls[0].get())?.method == "a")
        #expect(calls[1].failure == .invalidRequest)
        #expect((try? calls[2].get())?.params == [.string("x")])
    }

    @Test func getRequestsCarryBase64Params() throws {
        let params = Data(#"["token:s",["http://h/x"]]"#.utf8).base64EncodedString()
        let query = RPCServer.query(of: "method=aria2.addUri&id=7&params=\(params.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")
        let call = try JSONRPC.request(query: query).get()
        // aria2 echoes a query's id as its text.
        #expect(call.method == "aria2.addUri" && call.id == .string("7"))
        #expect(call.params == [.string("token:s"), .array([.string("http://h/x")])])
        #expect(JSONRPC.request(query: ["method": "m", "params": "!!!"]).failure == .parse)
        #expect(JSONRPC.request(query: [:]).failure == .invalidRequest)
    }

    // MARK: options and paths

    @Test func optionsMapOntoTheJob() throws {
        let dir = TempDirectory()
        let paths = Aria2Paths(base: dir.path, roots: [])
        let sent: JSON = [
            "dir": .string(dir.path + "/sub"), "out": "file.iso", "split": "8", "max-connection-per-server": "4",
            "header": ["X-A: 1"], "referer": "https://ref.example/", "user-agent": "agent/1",
            "checksum": .string("sha-256=" + String(repeating: "AB", count: 32)), "max-download-limit": "2M",
            "all-proxy": "http://proxy:3128", "pause": "true", "gid": "0123456789ABCDEF",
            // What a front end sends back from getOption, and what haul does not do: ignored.
            "bt-max-peers": "55", "log": "/tmp/x.log", "on-download-complete": "/bin/sh", "continue": .null,
        ]
        let options = try Aria2Options.parse(sent, paths: paths).get()
        var job = DownloadJob(url: "http://h/x", outputDirectory: paths.base)
        options.apply(to: &job, split: 5, connectionsPerServer: 1)
        #expect(job.outputDirectory == paths.base + "/sub")
        // Reached from its root without following a link when the download starts.
        #expect(job.confinedTo == paths.base)
        #expect(job.outputName == "file.iso")
        #expect(job.segments == 4)
        #expect(job.headers == ["X-A: 1", "Referer: https://ref.example/"])
        #expect(job.transfer.userAgent == "agent/1")
        #expect(job.checksum == Checksum(algorithm: .sha256, hex: String(repeating: "ab", count: 32)))
        #expect(job.transfer.maxReceiveRate == 2 << 20)
        #expect(job.transfer.proxy == "http://proxy:3128")
        #expect(options.pause == true && options.gid == "0123456789abcdef")

        // aria2's defaults: one connection per server unless asked.
        var plain = DownloadJob(url: "http://h/x", outputDirectory: paths.base)
        try Aria2Options.parse(["split": "16"], paths: paths).get().apply(to: &plain, split: 5, connectionsPerServer: 1)
        #expect(plain.segments == 1)
        try Aria2Options.parse(["max-connection-per-server": "16"], paths: paths).get()
            .apply(to: &plain, split: 5, connectionsPerServer: 1)
        #expect(plain.segments == 5)
    }

    @Test func outIsOneName() {
        let paths = Aria2Paths(base: "/tmp", roots: [])
        // A slash that a combining mark (or a prepended letter) joins into a Character is a slash all the same.
        for bad in ["../x", "a/b", "..", ".", "", "a\\b", "x\0y", "...", "../\u{301}x", "a\u{0D4E}/b"] {
            #expect(Aria2Options.parse(["out": .string(bad)], paths: paths).failure != nil, "out \(bad.debugDescription)")
        }
        #expect((try? Aria2Options.parse(["out": "x.bin"], paths: paths).get())?.out == "x.bin")
        #expect(Aria2Options.parse(["header": ["X: a\r\nY: b"]], paths: paths).failure != nil)
        #expect(Aria2Options.parse(["max-download-limit": "fast"], paths: paths).failure != nil)
        #expect(Aria2Options.parse(["checksum": "adler32=1"], paths: paths).failure != nil)
    }

    @Test func dirMustLieUnderAnAllowedRoot() throws {
        let dir = TempDirectory()
        let root = dir.path + "/downloads"
        try FileManager.default.createDirectory(atPath: root + "/music", withIntermediateDirectories: true)
        // A link inside the root that leads out of it.
        try FileManager.default.createSymbolicLink(atPath: root + "/escape", withDestinationPath: "/etc")
        let paths = Aria2Paths(base: root, roots: [])
        #expect(try paths.allowedDirectory(root + "/music").get() == paths.base + "/music")
        #expect(try paths.allowedDirectory("music/new/deeper").get() == paths.base + "/music/new/deeper")
        #expect(try paths.allowedDirectory(root).get() == paths.base)
        for bad in ["/etc", "/", dir.path, root + "/../", root + "/music/../../x", root + "/escape", root + "/escape/cron.d",
                    root + "x", "/home/user/.bashrc",
                    // `..` and a link reached through a slash that a combining mark joins into one Character.
                    root + "/../\u{301}x", root + "/escape/\u{301}x", "../\u{301}x"] {
            #expect(paths.allowedDirectory(bad).failure != nil, "dir \(bad)")
        }
        // More roots when configured.
        let other = Aria2Paths(base: root, roots: [root, dir.path + "/media"])
        #expect(try other.allowedDirectory(dir.path + "/media/tv").get().hasSuffix("/media/tv"))
    }

    // MARK: who may call

    @Test func onlyLoopbackNamesOfThisPortAreTakenAsHost() {
        let policy = RPCRequestPolicy(host: "127.0.0.1", port: 6800, allowRemote: false, origins: [])
        for good in ["127.0.0.1:6800", "localhost:6800", "LOCALHOST", "[::1]:6800", "127.0.0.1"] {
            #expect(policy.allowsHost(good), "\(good)")
        }
        for bad in ["evil.example", "evil.example:6800", "127.0.0.1:80", "127.0.0.1.evil.example:6800", "[::1]:1", "", nil] {
            #expect(!policy.allowsHost(bad), "\(bad ?? "nil")")
        }
        let bound = RPCRequestPolicy(host: "127.0.0.1", port: 0, allowRemote: false, origins: [])
        bound.bound(to: 41234)
        #expect(bound.allowsHost("127.0.0.1:41234") && !bound.allowsHost("127.0.0.1:0"))
    }

    @Test func originsAreAllowListed() {
        let policy = RPCRequestPolicy(host: "127.0.0.1", port: 6800, allowRemote: false,
                                      origins: ["https://ariang.example"])
        for good in [nil, "chrome-extension://abcdefgh", "moz-extension://1234-5678", "https://ariang.example",
                     "https://AriaNg.example/"] {
            #expect(policy.allowsOrigin(good), "\(good ?? "nil")")
        }
        for bad in ["https://evil.example", "null", "http://ariang.example", "chrome-extension://", "file://"] {
            #expect(!policy.allowsOrigin(bad), "\(bad)")
        }
        let withNull = RPCRequestPolicy(host: "127.0.0.1", port: 6800, allowRemote: false, origins: ["null"])
        #expect(withNull.allowsOrigin("null"))
    }

    /// The listening address's own origin is what Python's websocket-client (aria2p's notification
    /// listener) sends by default: `http://127.0.0.1:PORT`, of the port bound.
    @Test func theListeningAddressesOwnOriginIsAllowed() {
        let policy = RPCRequestPolicy(host: "127.0.0.1", port: 0, allowRemote: false, origins: [])
        policy.bound(to: 41234)
        for good in ["http://127.0.0.1:41234", "http://localhost:41234", "https://127.0.0.1:41234", "HTTP://LOCALHOST:41234/"] {
            #expect(policy.allowsOrigin(good), "\(good)")
        }
        for bad in ["http://127.0.0.1:41235", "http://127.0.0.1", "http://127.0.0.1:0", "http://127.0.0.2:41234",
                    "http://evil.example:41234", "ws://127.0.0.1:41234"] {
            #expect(!policy.allowsOrigin(bad), "\(bad)")
        }
        let v6 = RPCRequestPolicy(host: "::1", port: 6800, allowRemote: false, origins: [])
        #expect(v6.allowsOrigin("http://[::1]:6800") && !v6.allowsOrigin("http://::1:6800"))
        let standard = RPCRequestPolicy(host: "127.0.0.1", port: 80, allowRemote: false, origins: [])
        #expect(standard.allowsOrigin("http://127.0.0.1") && !standard.allowsOrigin("https://127.0.0.1"))
    }

    // MARK: bitfield

    /// aria2's `bitfield`: hex, high bit first, a bit a piece of 1 MiB, set only for a piece wholly done.
    @Test func theBitfieldShowsWholePiecesOfTheCompletedRanges() {
        let mib = Aria2Status.pieceLength
        func bits(_ total: Int64, _ ranges: [(Int64, Int64)]) -> String {
            Aria2Status.bitfield(pieces: (total + mib - 1) / mib, total: total,
                                 completed: ranges.map { ByteRange($0.0, $0.1) })
        }
        #expect(bits(7 * mib, [(0, 3 * mib)]) == "e0", "the first 3 of 7")
        #expect(bits(7 * mib, []) == "00")
        #expect(bits(7 * mib, [(0, 7 * mib)]) == "fe", "all 7, the padding bit zero")
        #expect(bits(9 * mib, [(0, 9 * mib)]) == "ff80")
        // Holes show as holes; a piece partly done is not done.
        #expect(bits(7 * mib, [(0, mib), (2 * mib, 3 * mib)]) == "a0")
        #expect(bits(7 * mib, [(0, mib + mib / 2), (2 * mib - 1, 4 * mib + 1)]) == "b0")
        #expect(bits(7 * mib, [(mib / 2, 7 * mib)]) == "7e")
        // The last piece is short: done when the range reaches the end of the file.
        #expect(bits(6 * mib + 100, [(6 * mib, 6 * mib + 100)]) == "02")
        #expect(bits(6 * mib + 100, [(6 * mib, 6 * mib + 99)]) == "00")
        // Unmerged and overlapping (a state file edited by hand): the same as merged.
        #expect(bits(16 * mib, [(8 * mib, 16 * mib), (0, mib), (mib, 2 * mib), (mib / 2, mib + 1)]) == "c0ff")
    }

    @Test func statusCarriesTheBitfieldFromTheRangesAndAllOnesWhenDone() {
        let mib = Aria2Status.pieceLength
        var entry = Roster.Entry(DownloadRecord(id: 1, url: "http://h/x", name: "x"), directory: "/tmp", added: Date(),
                                 gid: "0123456789abcdef")
        entry.total = 7 * mib
        entry.state = .paused
        entry.completed = 3 * mib
        let paused = Aria2Status.status(of: entry, job: nil, keys: ["bitfield", "numPieces"], at: .origin,
                                        completed: { [ByteRange(0, 3 * mib)] })
        #expect(paused["bitfield"] == "e0" && paused["numPieces"] == "7")
        entry.state = .done
        let done = Aria2Status.status(of: entry, job: nil, keys: ["bitfield"], at: .origin, completed: { [] })
        #expect(done["bitfield"] == "fe")
        // Not read unless asked for.
        let unasked = Aria2Status.status(of: entry, job: nil, keys: ["gid"], at: .origin, completed: {
            Issue.record("the ranges were read for a status without bitfield")
            return []
        })
        #expect(unasked["bitfield"] == nil)
    }

    // MARK: a WebSocket session's outbox

    /// A reply is handed over only when the writer takes it: the session reads no further call meanwhile.
    @Test func aReplyWaitsForTheWriter() async {
        let outbox = SessionOutbox(notificationLimit: 4)
        let (taken, signal) = AsyncStream.makeStream(of: Bool.self)
        let sender = Task {
            signal.yield(await outbox.send(reply: "r1"))
            signal.yield(await outbox.send(reply: "r2"))
            signal.finish()
        }
        var results = taken.makeAsyncIterator()
        #expect(await outbox.next() == "r1")
        #expect(await results.next() == true)
        // r2 is queued: its sender waits until it is taken, and the write under way counts as stalled
        // until it is done.
        #expect(outbox.isStalled(longerThan: .zero))
        outbox.wrote()
        #expect(!outbox.isStalled(longerThan: .zero))
        #expect(await outbox.next() == "r2")
        #expect(await results.next() == true)
        await sender.value
        outbox.finish(dropping: false)
        #expect(await outbox.next() == nil)
        #expect(await outbox.send(reply: "late") == false)
    }

    /// Notifications cannot wait: past the limit unsent, the session is to be closed; closing lets a waiting
    /// sender go and drops what was queued.
    @Test func notificationsAreBoundedAndClosingLetsTheSenderGo() async {
        let outbox = SessionOutbox(notificationLimit: 3)
        #expect(outbox.notify("n1") && outbox.notify("n2") && outbox.notify("n3"))
        #expect(!outbox.notify("n4"), "a fourth unsent")
        #expect(await outbox.next() == "n1")
        outbox.wrote()
        #expect(outbox.notify("n4"))
        let sender = Task { await outbox.send(reply: "r") }
        // The reply waits behind n2, n3 and n4; closing lets its sender go without it.
        while outbox.queued < 4 { await Task.yield() }
        outbox.finish(dropping: true)
        #expect(await sender.value == false)
        #expect(await outbox.next() == nil)
        #expect(!outbox.notify("n5"))
    }

    // MARK: the secret

    @Test func theSecretIsMadeOnceAndPrivate() throws {
        let dir = TempDirectory()
        let path = dir.path + "/rpc-secret"
        let secret = try RPCSecret.load(path, create: true)
        let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .newlines)
        #expect(text.count == 64 && text.allSatisfy(\.isHexDigit))
        #expect(secret.matches(text) && !secret.matches(text + "0") && !secret.matches(String(text.dropLast())) && !secret.matches(""))
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o600)
        // One that others may read is refused, as a TLS key is (it was taken silently).
        let shared = dir.path + "/shared-secret"
        _ = FileManager.default.createFile(atPath: shared, contents: Data("s3cret\n".utf8),
                                           attributes: [.posixPermissions: 0o644])
        #expect(throws: HaulError.self) { try RPCSecret.load(shared, create: false) }
        // Made once: the second service reads the same.
        #expect(try RPCSecret.load(path, create: true).matches(text))
        // A link is not followed.
        try FileManager.default.createSymbolicLink(atPath: dir.path + "/link", withDestinationPath: path)
        #expect(throws: HaulError.self) { try RPCSecret.load(dir.path + "/link", create: false) }
        #expect(throws: HaulError.self) { try RPCSecret.load(dir.path + "/missing", create: false) }
    }

    @Test func wrongSecretsFromOnePeerAreLimited() async {
        let clock = ManualClock()
        let gate = SecretGate(clock: clock)
        for _ in 0..<SecretGate.limit {
            #expect(await !gate.isBlocked("10.0.0.1"))
            await gate.failed("10.0.0.1")
        }
        #expect(await gate.isBlocked("10.0.0.1"))
        #expect(await !gate.isBlocked("10.0.0.2"), "another peer is not affected")
        clock.advance(by: .seconds(61))
        #expect(await !gate.isBlocked("10.0.0.1"), "a minute later the peer may try again")
    }

    @Test func notificationsFollowTheStates() {
        #expect(Aria2Status.notification(from: .queued, to: .connecting) == "aria2.onDownloadStart")
        #expect(Aria2Status.notification(from: .connecting, to: .downloading) == nil)
        #expect(Aria2Status.notification(from: .downloading, to: .paused) == "aria2.onDownloadPause")
        #expect(Aria2Status.notification(from: .downloading, to: .cancelled) == "aria2.onDownloadStop")
        #expect(Aria2Status.notification(from: .downloading, to: .done) == "aria2.onDownloadComplete")
        #expect(Aria2Status.notification(from: .downloading, to: .failed(HaulError(.network, "x"))) == "aria2.onDownloadError")
        #expect(Aria2Status.errorCode(HaulError(.server, "server answered 404 Not Found", httpStatus: 404)) == 3)
        #expect(Aria2Status.errorCode(HaulError(.checksum, "mismatch")) == 32)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
