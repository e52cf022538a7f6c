import Foundation
import HaulCore
import HaulServiceClient
import Testing
import TestSupport
@testable import HaulService

/// A download's sources on the service's faces: aria2's `addUri` takes every URI of a call as a source and
/// `max-connection-per-server` as the per-host cap; `getUris`, `getServers`, `tellStatus` and `haul ls --json`
/// show the sources as the engine reports them (`DownloadRecord.sources`), else the job's; the store keeps no
/// mirror's password.
@Suite struct SourcesFacesTests {
    typealias F = StoreFixtures

    /// A roster entry of a download from three sources, `state`, with the engine's report of them when given.
    static func entry(_ state: DownloadState, reported: [SourceStatus] = []) -> Roster.Entry {
        var record = DownloadRecord(id: 7, url: "http://a.example/x.iso", name: "x.iso", state: state)
        record.apply(.sources(id: 7, reported), at: .origin)
        var entry = Roster.Entry(record, directory: "/dl", added: Date(timeIntervalSince1970: 0), gid: "0123456789abcdef")
        entry.sources = ["http://a.example/x.iso", "http://ann:***@b.example/x.iso", "http://c.example/x.iso"]
        return entry
    }

    static let reported = [
        SourceStatus(url: "http://a.example/x.iso", state: .active, bytes: 4 << 20, bytesPerSecond: 1_000_000.4,
                     connections: 2),
        SourceStatus(url: "http://ann:***@b.example/x.iso", state: .failed, bytes: 1 << 20,
                     reason: "connection refused"),
        SourceStatus(url: "http://c.example/x.iso", state: .active, bytes: 2 << 20, bytesPerSecond: 500_000,
                     connections: 1),
    ]

    @Test func addUriTakesEveryURIAsASource() async throws {
        try await InProcessService.with { harness in
            let urls = ["http://127.0.0.1:1/x.iso", "http://ann:pw@127.0.0.1:2/x.iso"]
            let gid = try await harness.clients { _, aria2 async throws in
                let refused = try await aria2.call("aria2.addUri", [[urls[0], "rsync://127.0.0.1/x.iso"]])
                #expect(refused.errorMessage == "mirror 'rsync://127.0.0.1/x.iso': unsupported URL scheme \"rsync\"")
                let notText = try await aria2.call("aria2.addUri", [[urls[0], 3] as [Any]])
                #expect(notText.errorMessage == "a URI must be a string")
                let added = try await aria2.call("aria2.addUri", [urls, ["max-connection-per-server": "2", "pause": "true"]])
                let gid = try #require(added.string)
                let uris = try await aria2.call("aria2.getUris", [gid]).list as? [[String: String]]
                #expect(uris == [["uri": urls[0], "status": "used"],
                                 ["uri": "http://ann:***@127.0.0.1:2/x.iso", "status": "waiting"]])
                let options = try await aria2.call("aria2.getOption", [gid]).object
                #expect(options["max-connection-per-server"] as? String == "2" && options["split"] as? String == "2")
                return gid
            }
            let job = try #require(await harness.service.manager.job(of: try await harness.id(of: gid)))
            #expect(job.sources.map(\.url) == urls)
            #expect(job.connectionsPerServer == 2 && job.segments == 2)
        }
    }

    /// As aria2 answers: `getUris` every source, used once asked; `getServers` the ones fetching now with
    /// their speeds; `connections` over all sources; each file's `uris` every source.
    @Test func theAria2FaceShowsTheReportedSources() {
        let running = Self.entry(.downloading, reported: Self.reported)
        #expect(Aria2Status.uris(of: running) == [
            ["uri": "http://a.example/x.iso", "status": "used"],
            ["uri": "http://ann:***@b.example/x.iso", "status": "used"],
            ["uri": "http://c.example/x.iso", "status": "used"],
        ])
        #expect(Aria2Status.servers(of: running, at: .origin) == [
            ["uri": "http://a.example/x.iso", "currentUri": "http://a.example/x.iso", "downloadSpeed": "1000000"],
            ["uri": "http://c.example/x.iso", "currentUri": "http://c.example/x.iso", "downloadSpeed": "500000"],
        ])
        let status = Aria2Status.status(of: running, job: nil, keys: ["connections", "files"], at: .origin)
        #expect(status["connections"] == "3")
        #expect(status["files"]?.array?.first?["uris"] == Aria2Status.uris(of: running))

        // Before the engine reports them: the first in use, the others waiting.
        let queued = Self.entry(.queued)
        #expect(Aria2Status.uris(of: queued) == [
            ["uri": "http://a.example/x.iso", "status": "used"],
            ["uri": "http://ann:***@b.example/x.iso", "status": "waiting"],
            ["uri": "http://c.example/x.iso", "status": "waiting"],
        ])
    }

    /// `haul ls --json`: a `sources` array for a download from several, each with every key (`error` null
    /// when none); the job's sources, waiting, until the engine reports them; none for a download from one.
    @Test func lsShowsEachSource() throws {
        let reported = Roster.download(Self.entry(.downloading, reported: Self.reported), at: .origin)
        let document = try #require(try JSONSerialization.jsonObject(with: Wire.encode(reported)) as? [String: Any])
        let sources = try #require(document["sources"] as? [[String: Any]])
        #expect(sources.count == 3)
        #expect(sources[0]["url"] as? String == "http://a.example/x.iso" && sources[0]["state"] as? String == "active")
        #expect(sources[0]["bytes"] as? Int == 4 << 20 && sources[0]["speed"] as? Int == 1_000_000)
        #expect(sources[0]["connections"] as? Int == 2 && sources[0]["error"] is NSNull)
        #expect(sources[1]["state"] as? String == "failed" && sources[1]["error"] as? String == "connection refused")

        let waiting = Roster.download(Self.entry(.queued), at: .origin).sources
        #expect(waiting?.map(\.url) == Self.entry(.queued).sources)
        #expect(waiting?.allSatisfy { $0.state == "waiting" && $0.bytes == 0 && $0.speed == 0 && $0.error == nil } == true)

        var single = Self.entry(.queued)
        single.sources = []
        let one = try #require(try JSONSerialization.jsonObject(with: Wire.encode(Roster.download(single, at: .origin)))
            as? [String: Any])
        #expect(one["sources"] == nil)
    }

    /// A service started again lists the stored download's sources as its job kept them (passwords masked).
    @Test func aRestoredDownloadKeepsItsSources() async throws {
        let state = TempDirectory()
        let store = try Store(directory: state.path)
        var job = F.job("a.bin")
        job.sources.append(DownloadSource(url: "http://ann:pw@mirror.example/a.bin"))
        let id = try store.insert(job, file: "a.bin", added: F.time(0))
        try store.apply([.state(id: id, .paused)], at: F.time(1))
        let service = Service(configuration: .init(directory: StateDirectory(path: state.path)), store: store)
        _ = try await service.restore()
        let listed = await service.list().first { $0.id == id }
        #expect(listed?.sources?.map(\.url) == [job.url, "http://ann:***@mirror.example/a.bin"])
        #expect(listed?.sources?.map(\.state) == ["waiting", "waiting"])
        await service.manager.cancelAll()
    }

    @Test func noMirrorsPasswordIsStored() {
        var job = DownloadJob(url: "http://a.example/x.iso", outputDirectory: "/dl")
        job.sources.append(DownloadSource(url: "http://ann:pw@b.example/x.iso"))
        let withheld = WithheldJob(job)
        #expect(withheld.job.sources.map(\.url) == ["http://a.example/x.iso", "http://ann:***@b.example/x.iso"])
        #expect(withheld.secretsWithheld)
    }
}
