import Foundation
import HaulCore
import HaulService
import SampleServer
import Testing
import TestSupport

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

            // Paused: exactly the ranges on disk. The status says paused at once; the part's last checkpoint
            // follows as the download's task ends (as in the next test), so the two agree once it has.
            #expect(try await rpc.call("aria2.pause", [gid]).result as? String == gid)
            var seen = ""
            let pausedBits = try await Self.poll("the pause, and its bitfield to match the part") { () -> String? in
                let now = try await status()
                guard now["status"] as? String == "paused", let bits = now["bitfield"] as? String else { return nil }
                seen = "\(bits) \(ranges())"
                return Self.pieces(bits, 20) == Self.pieces(ranges(), total: 20 * mib) ? bits : nil
            }
            #expect(!seen.isEmpty)
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
