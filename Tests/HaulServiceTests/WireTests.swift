import Foundation
import Testing
@testable import HaulCore
@testable import HaulService
@testable import HaulServiceClient
import TestSupport

/// What crosses the socket: every manager event survives the trip as the same event, as a flat JSON
/// object, and the event stream's framing is read back whatever the batch boundaries.
@Suite struct WireTests {
    static let events: [ManagerEvent] = [
        .added(id: 1, url: "http://u:***@h/a.bin", file: "a.bin"),
        .state(id: 1, .connecting),
        .started(id: 1, file: "a.bin", path: "/d/a.bin", total: 1000),
        .state(id: 1, .downloading),
        .progress(id: 1, DownloadProgress(completed: 500, batchBytes: 100, total: 1000, bytesPerSecond: 250.5)),
        .progress(id: 2, DownloadProgress(completed: 5, batchBytes: 5, total: nil, bytesPerSecond: 0)),
        .fact(id: 1, .retrying(attempt: 1, of: 5, delaySeconds: 0.5, resumeAt: 500,
                               reason: HaulError(.network, "connection reset by peer"))),
        .fact(id: 1, .previewSaved(path: "/d/a.partial.jpg")),
        .state(id: 1, .failed(HaulError(.server, "server answered 503 Service Unavailable", httpStatus: 503))),
        .finished(id: 1, DownloadResult(file: "a.bin", path: "/d/a.bin", bytes: 1000, skipped: false), seconds: 2.5),
        .state(id: 1, .done),
        .state(id: 1, .paused),
        .state(id: 1, .cancelled),
        .state(id: 1, .queued),
        .removed(id: 1),
    ]

    static func wire(_ event: ManagerEvent) -> Data {
        Data(event.json(with: Wire.encoder()))
    }

    @Test(arguments: events + [.started(id: 1, file: "a.bin", path: "/d/a.bin", total: 1000, part: "2049:77")])
    func everyEventSurvivesTheWire(event: ManagerEvent) throws {
        #expect(try Wire.decode(ManagerEvent.self, from: Self.wire(event)) == event)
    }

    /// Names and paths as they come: quotes, backslashes, control characters, slashes, any Unicode; and
    /// numbers at their edges.
    static let awkward: [ManagerEvent] = [
        .added(id: 7, url: "http://h/a \"b\"\\c?d=/e&f=\u{1}\u{1F}\u{7F}", file: "tab\tnew\nline\rcr\u{8}\u{C}.bin"),
        .started(id: Int.max, file: "ünï cödé 文件 😀.bin", path: "/d/ünï cödé 文件 😀.bin", total: Int64.max),
        .started(id: 0, file: "", path: "", total: 0),
        .progress(id: 3, DownloadProgress(completed: 0, batchBytes: 0, total: 0, bytesPerSecond: 1e-7)),
        .progress(id: 3, DownloadProgress(completed: 1, batchBytes: 1, total: nil, bytesPerSecond: 1e21)),
        .progress(id: 3, DownloadProgress(completed: 1, batchBytes: 1, total: nil, bytesPerSecond: 123456789.123)),
        .finished(id: 4, DownloadResult(file: "f", path: "/f", bytes: Int64.max, skipped: false), seconds: 1e-9),
    ]

    /// The writer's JSON is valid JSON that reads back as the same event, and a flat object whose members are
    /// what `JSONEncoder` writes for the same values (the nested failure or fact as their own `Codable` form).
    @Test(arguments: events + awkward) func theWrittenEventIsValidJSON(event: ManagerEvent) throws {
        let data = Self.wire(event)
        let text = String(decoding: data, as: UTF8.self)
        #expect(try Wire.decode(ManagerEvent.self, from: data) == event, "\(text)")
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? NSDictionary, "\(text)")
        #expect(object["event"] as? String == event.kind)
        #expect((object["id"] as? NSNumber)?.intValue == event.downloadID)
        // Its own keys in order, as a sorted-keys encoder writes them (people read the stream too).
        #expect(Self.topLevelKeys(of: text) == Self.topLevelKeys(of: text).sorted(), "\(text)")
    }

    /// The keys of a JSON object's own members, in the order written.
    static func topLevelKeys(of json: String) -> [String] {
        var keys: [String] = []
        var depth = 0
        var inString = false
        var escaped = false
        var current = ""
        var expectingKey = false
        for character in json {
            if inString {
                if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" {
                    inString = false
                    if expectingKey { keys.append(current); expectingKey = false }
                    continue
                }
                current.append(character)
                continue
            }
            switch character {
            case "\"":
                inString = true
                current = ""
            case "{", "[":
                depth += 1
                expectingKey = depth == 1 && character == "{"
            case "}", "]":
                depth -= 1
            case ",":
                expectingKey = depth == 1
            default:
                break
            }
        }
        return keys
    }

    @Test func eventsAreFlatObjects() throws {
        let progress = Self.events[4]
        let object = try #require(try JSONSerialization.jsonObject(with: Self.wire(progress)) as? [String: Any])
        #expect(object["event"] as? String == "progress")
        #expect(object["id"] as? Int == 1 && object["completed"] as? Int == 500 && object["total"] as? Int == 1000)
        let failed = try #require(try JSONSerialization.jsonObject(with: Self.wire(Self.events[8])) as? [String: Any])
        #expect(failed["state"] as? String == "failed")
        #expect((failed["error"] as? [String: Any])?["category"] as? String == "server")
        let started = try #require(try JSONSerialization.jsonObject(
            with: Self.wire(.started(id: 2, file: "a", path: "/d/a", total: nil, part: "2049:77"))) as? [String: Any])
        #expect(started["part"] as? String == "2049:77", "the part's identity crosses the socket too")
    }

    /// The unknown-kind rule: an event of a kind this version does not know (a newer service's) is
    /// `UnknownKind`, which the client skips; keys a known kind does not carry change nothing.
    @Test func anEventOfANewerServiceIsSkipped() throws {
        #expect(throws: ManagerEvent.UnknownKind(kind: "teleported")) {
            try Wire.decode(ManagerEvent.self, from: Data(#"{"event":"teleported","id":3,"url":"http://h/x"}"#.utf8))
        }
        let state = try Wire.decode(ManagerEvent.self,
                                    from: Data(#"{"event":"state","id":3,"state":"done","url":"http://h/x","total":5}"#.utf8))
        #expect(state == .state(id: 3, .done))
    }

    @Test func serverSentEventsSplitAnywhere() {
        let stream = Array("data: {\"a\":1}\n\n: comment\n\ndata: {\"b\":2}\r\n\r\ndata: x\ndata: y\n\n".utf8)
        for cut in 0...stream.count {
            var parser = ServerSentEvents()
            let events = parser.feed(stream[..<cut]) + parser.feed(stream[cut...])
            #expect(events.map { String(decoding: $0, as: UTF8.self) } == [#"{"a":1}"#, #"{"b":2}"#, "x\ny"])
        }
    }

    /// The snapshot's end (`: live`) is found where it is among the events, however the reads cut the stream:
    /// a screen that attaches again shows the new snapshot once it is whole.
    @Test func theSnapshotsEndIsFoundAnywhere() {
        let stream = Array("data: 1\n\n: live\n\ndata: 2\n\n: other\n\n".utf8)
        for cut in 0...stream.count {
            var parser = ServerSentEvents()
            let parts = parser.parts(stream[..<cut]) + parser.parts(stream[cut...])
            #expect(parts == [.data(Data("1".utf8)), .live, .data(Data("2".utf8))])
        }
    }

    /// `ls` (and aria2's `downloadSpeed`) say 0 for a download nothing has come from for two seconds, not the
    /// last rate measured: a rate cap's silence after libcurl's burst showed 12 MiB/s for half a minute.
    @Test func aQuietDownloadsSpeedIsZero() throws {
        var roster = Roster()
        roster.insert(Roster.Entry(DownloadRecord(id: 1, url: "http://h/a.bin", name: "a.bin"), directory: "/d", added: Date(),
                                   gid: "00000000000000a1"))
        let start = Moment.origin
        roster.apply(.state(id: 1, .downloading), at: start)
        roster.apply(.progress(id: 1, DownloadProgress(completed: 100, batchBytes: 100, total: 1000, bytesPerSecond: 300)),
                     at: start)
        #expect(roster.list(at: start + .seconds(1)).first?.speed == 300)
        #expect(roster.list(at: start + .seconds(3)).first?.speed == 0)
        let entry = try #require(roster[1])
        #expect(Aria2Status.status(of: entry, job: nil, keys: ["downloadSpeed"], at: start + .seconds(3))["downloadSpeed"]
                == .string("0"))
    }

    /// A download the service inserted but the manager has not told yet is not in a snapshot, so a client
    /// attaching in that gap gets its `added` once, live (CI: a screen showed a second row, stuck queued).
    @Test func aDownloadNotYetToldIsLeftOutOfTheSnapshot() {
        var roster = Roster()
        roster.insert(Roster.Entry(DownloadRecord(id: 1, url: "http://h/a.bin", name: "a.bin"), directory: "/d", added: Date(),
                                   gid: "00000000000000a1", announced: false))
        #expect(roster.snapshot().isEmpty)
        #expect(roster.list(at: .origin).map(\.id) == [1], "haul ls lists it all the same")
        roster.apply(.added(id: 1, url: "http://h/a.bin", file: "a.bin"), at: .origin)
        #expect(roster.snapshot().first == .added(id: 1, url: "http://h/a.bin", file: "a.bin"))
    }

    /// The count of active downloads is kept as events come (the service asks it at each one): over a
    /// random run of inserts, re-inserts, state changes, changes and removals it is what a count finds.
    @Test func theActiveCountIsKeptAsEventsCome() {
        var roster = Roster()
        var generator = SplitMix64(seed: 60)
        let states: [DownloadState] = [.queued, .connecting, .downloading, .paused, .done, .cancelled,
                                       .failed(HaulError(.network, "reset"))]
        for _ in 0..<5000 {
            let id = Int.random(in: 1...40, using: &generator)
            let state = states.randomElement(using: &generator)!
            switch Int.random(in: 0..<10, using: &generator) {
            case 0:
                roster.insert(Roster.Entry(DownloadRecord(id: id, url: "http://h/\(id)", name: "\(id)", state: state), directory: "/d",
                                           added: Date(), gid: String(format: "%016x", id)))
            case 1:
                roster.apply(.removed(id: id), at: .origin)
            case 2:
                roster.modify(id) { $0.state = state }
            default:
                roster.apply(.state(id: id, state), at: .origin)
            }
            let counted = roster.list(at: .origin).filter { !(DownloadState(name: $0.state)?.isFinished ?? true) }.count
            #expect(roster.active == counted)
            #expect(Set(roster.waiting).count == roster.waiting.count, "no download waits twice")
            #expect(roster.waiting.allSatisfy(roster.contains), "no removed download waits")
        }
    }

    /// `ls` says what a download waiting to retry keeps in its part, never less than it said.
    @Test func aRetryShowsWhatThePartKeeps() {
        var roster = Roster()
        roster.insert(Roster.Entry(DownloadRecord(id: 1, url: "http://h/a.bin", name: "a.bin"), directory: "/d", added: Date(),
                                   gid: "00000000000000a1"))
        let reason = HaulError(.network, "reset")
        roster.apply(.fact(id: 1, .retrying(attempt: 1, of: 5, delaySeconds: 1, resumeAt: 4096, reason: reason)), at: .origin)
        #expect(roster.list(at: .origin).first?.completed == 4096)
        roster.apply(.progress(id: 1, DownloadProgress(completed: 9000, batchBytes: 10, total: 20000, bytesPerSecond: 1)), at: .origin)
        roster.apply(.fact(id: 1, .retrying(attempt: 2, of: 5, delaySeconds: 1, resumeAt: 8192, reason: reason)), at: .origin)
        #expect(roster.list(at: .origin).first?.completed == 9000)
    }

    /// aria2's waiting list holds each queued or paused download once, kept as state events come.
    @Test func theWaitingListFollowsTheStates() {
        var roster = Roster()
        var generator = SplitMix64(seed: 61)
        let states: [DownloadState] = [.queued, .connecting, .downloading, .paused, .done, .cancelled]
        for id in 1...30 {
            roster.insert(Roster.Entry(DownloadRecord(id: id, url: "http://h/\(id)", name: "\(id)"), directory: "/d", added: Date(),
                                       gid: String(format: "%016x", id)))
        }
        for _ in 0..<3000 {
            let id = Int.random(in: 1...30, using: &generator)
            roster.apply(.state(id: id, states.randomElement(using: &generator)!), at: .origin)
            let expected = Set((1...30).filter { [.queued, .paused].contains(roster[$0]?.state) })
            #expect(Set(roster.waiting) == expected && roster.waiting.count == expected.count)
        }
    }

    @Test func theRosterSnapshotRebuildsWhatItHolds() {
        var roster = Roster()
        let added = Date(timeIntervalSince1970: 1_800_000_000)
        roster.insert(Roster.Entry(DownloadRecord(id: 1, url: "http://h/a.bin", name: "a.bin"), directory: "/d", added: added, gid: "00000000000000a1"))
        roster.insert(Roster.Entry(DownloadRecord(id: 2, url: "http://h/b.jpg", name: "b.jpg"), directory: "/d", added: added, gid: "00000000000000b2"))
        for event in Self.events.prefix(5) { roster.apply(event, at: .origin) }
        roster.apply(.fact(id: 2, .previewSaved(path: "/d/b.partial.jpg")), at: .origin)
        roster.apply(.state(id: 2, .cancelled), at: .origin)

        var copy = Roster()
        copy.insert(Roster.Entry(DownloadRecord(id: 1, url: "http://h/a.bin", name: "a.bin"), directory: "/d", added: added, gid: "00000000000000a1"))
        copy.insert(Roster.Entry(DownloadRecord(id: 2, url: "http://h/b.jpg", name: "b.jpg"), directory: "/d", added: added, gid: "00000000000000b2"))
        for event in roster.snapshot() { copy.apply(event, at: .origin) }
        #expect(copy.list(at: .origin) == roster.list(at: .origin))

        let list = roster.list(at: .origin)
        #expect(list.map(\.id) == [1, 2])
        #expect(list[0].state == "downloading" && list[0].completed == 500 && list[0].total == 1000)
        #expect(list[0].file == "/d/a.bin" && list[0].speed == 250.5)
        #expect(list[1].state == "cancelled" && list[1].file == "/d/b.jpg" && list[1].speed == 0)
        #expect(list[1].fact == .previewSaved(path: "/d/b.partial.jpg"))
        #expect(list[0].added == "2027-01-15T08:00:00Z")

        roster.apply(.removed(id: 1), at: .origin)
        #expect(roster.list(at: .origin).map(\.id) == [2])
    }

    @Test func stateDirectoryFollowsTheEnvironment() {
        #expect(StateDirectory.resolve(["HAUL_HOME": "/x/h/", "XDG_STATE_HOME": "/s", "HOME": "/home/u"]).path == "/x/h")
        #expect(StateDirectory.resolve(["XDG_STATE_HOME": "/s", "HOME": "/home/u"]).path == "/s/haul")
        #expect(StateDirectory.resolve(["XDG_STATE_HOME": "relative", "HOME": "/home/u"]).path == "/home/u/.local/state/haul")
        #expect(StateDirectory.resolve(["HOME": "/home/u"]).socket == "/home/u/.local/state/haul/haul.sock")
    }
}

extension WireTests {
    @Test func aJobFromAnOlderHaulTakesTheDefaultsOfWhatItLacks() throws {
        let old = #"{"url":"http://h/a.bin","outputDirectory":"/d","segments":4,"transfer":{"stallTimeout":5}}"#
        let job = try JSONDecoder().decode(DownloadJob.self, from: Data(old.utf8))
        #expect(job.url == "http://h/a.bin" && job.outputDirectory == "/d" && job.segments == 4)
        #expect(job.retries == 5 && job.resume && job.partialPreview && job.existingFile == .rename)
        // Stored before --no-sync existed: synced, as every job then was.
        #expect(job.sync && job.remoteTime && !job.timestamping)
        #expect(job.transfer.stallTimeout == 5 && job.transfer.connectTimeout == 15 && job.transfer.maxRedirects == 10)
        var full = DownloadJob(url: "http://h/b", outputDirectory: "/e", outputName: "x")
        full.checksum = Checksum(algorithm: .sha256, hex: String(repeating: "a", count: 64))
        full.headers = ["X-A: 1"]
        full.transfer.maxReceiveRate = 1000
        full.sync = false
        #expect(try JSONDecoder().decode(DownloadJob.self, from: JSONEncoder().encode(full)) == full)
        // The transfer options are stored flat, under their own names, and an unset one not at all.
        let transfer = try JSONSerialization.jsonObject(with: JSONEncoder().encode(full.transfer)) as? [String: Any]
        #expect(transfer?["maxReceiveRate"] as? Int == 1000 && transfer?["stallTimeout"] as? Double == 30)
        #expect(transfer?["proxy"] == nil && transfer?["values"] == nil)
        #expect(throws: (any Error).self) { try JSONDecoder().decode(DownloadJob.self, from: Data(#"{"url":"u"}"#.utf8)) }
    }
}

/// What a client says when nothing answers on the service's socket.
@Suite struct ServiceClientTests {
    /// A socket file that nothing listens on (a service killed without its cleanup): the message names the
    /// socket and says so, not libcurl's "failed to connect to localhost port 80".
    @Test func nothingListeningIsSaidPlainly() async throws {
        let dir = TempDirectory()
        let socketPath = dir.path + "/haul.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in socketPath.utf8.enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        close(fd)  // bound, never listened: connecting is refused
        let client = ServiceClient(directory: StateDirectory(path: dir.path))
        let error = await #expect(throws: HaulError.self) { () async throws in _ = try await client.list() }
        #expect(error?.message == "cannot reach the service at \(socketPath): no answer (it is not running, or it stopped meanwhile)",
                "\(error?.message ?? "")")
    }
}
