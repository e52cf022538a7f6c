import FoundationEssentials
import HaulModel
import Testing

/// A download has sources, not a URL: the job keeps them all (and an older haul's stored job, which has only
/// `url`, reads as one source), and the record keeps what each has done, sent to clients as it is.
@Suite struct DownloadSourceTests {
    /// A job with mirrors survives its JSON form (the store's, the socket's); one with a single source writes no
    /// `sources` (its JSON is what an older haul wrote and reads).
    @Test func aJobsSourcesSurviveItsJSONAndAnOldJobIsOneSource() throws {
        var job = DownloadJob(sources: [DownloadSource(url: "http://a/f.iso"),
                                        DownloadSource(url: "http://b/f.iso", priority: 2, location: "de")],
                              outputDirectory: "/d")
        job.connectionsPerServer = 2
        let back = try JSONDecoder().decode(DownloadJob.self, from: JSONEncoder().encode(job))
        #expect(back == job && back.url == "http://a/f.iso" && back.mirrors.map(\.url) == ["http://b/f.iso"])

        let single = DownloadJob(url: "http://a/f.iso", outputDirectory: "/d")
        let text = String(decoding: try JSONEncoder().encode(single), as: UTF8.self)
        #expect(!text.contains("sources") && !text.contains("connectionsPerServer"))
        let old = try JSONDecoder().decode(DownloadJob.self,
                                           from: Data(#"{"url":"http://a/f.iso","outputDirectory":"/d"}"#.utf8))
        #expect(old.sources == [DownloadSource(url: "http://a/f.iso")] && old.connectionsPerServer == 4)
    }

    /// Setting `url` changes the first source (the address the download is known by), not the others.
    @Test func theURLIsTheFirstSource() {
        var job = DownloadJob(sources: [DownloadSource(url: "http://a/f"), DownloadSource(url: "http://b/f")],
                              outputDirectory: "/d")
        job.url = "http://c/f"
        #expect(job.sources.map(\.url) == ["http://c/f", "http://b/f"])
    }

    /// The record keeps the last report of its sources; a run that ends leaves none fetching or with a rate, and
    /// a new reader given the replay has the same sources.
    @Test func theRecordKeepsItsSourcesAndStillsThemWhenTheRunEnds() throws {
        let reported = [SourceStatus(url: "http://a/f", state: .active, bytes: 500, bytesPerSecond: 50, connections: 2),
                        SourceStatus(url: "http://b/f", state: .dropped, reason: "serves another file (size 9, not 10)")]
        var record = DownloadRecord(id: 1, url: "http://a/f", name: "f")
        record.apply(.sources(id: 1, reported), at: .origin)
        record.apply(.sources(id: 2, []), at: .origin)
        #expect(record.sources == reported)

        var reader = DownloadRecord(.added(id: 1, url: "http://a/f", file: "f"))!
        for event in record.replay { reader.apply(event, at: .origin) }
        #expect(reader.sources == reported)

        record.apply(.state(id: 1, .paused), at: .origin)
        #expect(record.sources.map(\.state) == [.idle, .dropped])
        #expect(record.sources.allSatisfy { $0.bytesPerSecond == 0 && $0.connections == 0 })
        #expect(record.sources[0].bytes == 500, "what a source brought stays")
    }

    /// `sources` on the wire: a flat event with the statuses as objects; read back the same.
    @Test func sourcesGoOverTheWireAsThemselves() throws {
        let event = ManagerEvent.sources(id: 7, [SourceStatus(url: "ftp://m/f", state: .failed, bytes: 3,
                                                              reason: "refused: 550")])
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = event.json(with: encoder)
        let text = String(decoding: json, as: UTF8.self)
        #expect(text.hasPrefix(#"{"event":"sources","id":7,"sources":[{"#))
        #expect(try JSONDecoder().decode(ManagerEvent.self, from: Data(json)) == event)
    }
}
