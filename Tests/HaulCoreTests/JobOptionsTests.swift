import Testing
@testable import HaulCore

/// The one reader of a download's options by aria2's names (`JobOptions`), which an input file and the aria2
/// face both use; `OptionFacesTests` checks the same bad value through both.
@Suite struct JobOptionsTests {
    @Test func optionsMapOntoTheJob() throws {
        var options = JobOptions()
        for (name, value) in [(JobOptions.Name.out, "x.iso"), (.dir, "sub"), (.segments, "8"), (.split, "6"),
                              (.connectionsPerServer, "4"), (.header, "X-A: 1"), (.referer, "https://ref.example/"),
                              (.userAgent, "agent/1"), (.allProxy, "http://proxy:3128"), (.limitRate, "2M"),
                              (.checksum, "sha-1=" + String(repeating: "AB", count: 20))] {
            try options.set(name, value)
        }
        var job = DownloadJob(url: "http://h/x", outputDirectory: "/dl")
        job.headers = ["Referer: http://old/", "X-B: 2"]
        options.apply(to: &job)
        #expect(job.outputName == "x.iso" && job.outputDirectory == "sub")
        // The fewest connections of those given.
        #expect(job.segments == 4)
        // Headers are added to the job's own; the referer replaces its Referer.
        #expect(job.headers == ["X-B: 2", "X-A: 1", "Referer: https://ref.example/"])
        #expect(job.transfer.userAgent == "agent/1" && job.transfer.proxy == "http://proxy:3128")
        #expect(job.transfer.maxReceiveRate == 2 << 20)
        #expect(job.checksum == Checksum(algorithm: .sha1, hex: String(repeating: "ab", count: 20)))
    }

    /// `max-connection-per-server` is the per-host cap of the job's sources too; the connections stay the
    /// fewer of it and `split`.
    @Test func thePerServerCapIsKept() throws {
        var options = JobOptions()
        try options.set(.split, "8")
        try options.set(.connectionsPerServer, "3")
        var job = DownloadJob(url: "http://h/x", outputDirectory: "/dl")
        options.apply(to: &job)
        #expect(job.segments == 3 && job.connectionsPerServer == 3)
        var untouched = DownloadJob(url: "http://h/x", outputDirectory: "/dl")
        JobOptions().apply(to: &untouched)
        #expect(untouched.connectionsPerServer == DownloadJob.defaultConnectionsPerServer)
    }

    /// As aria2 spreads `split` over a download's URIs: the connections are the fewer of `split` and the cap
    /// times the sources' hosts (two mirrors on one host share its cap, whatever their ports).
    @Test func splitSpreadsOverTheSourcesHosts() throws {
        var options = JobOptions()
        try options.set(.split, "5")
        try options.set(.connectionsPerServer, "1")
        var job = DownloadJob(sources: ["http://a/x", "http://b:81/x", "http://c/x", "http://c:8080/x"]
                                .map { DownloadSource(url: $0) }, outputDirectory: "/dl")
        options.apply(to: &job)
        #expect(job.segments == 3 && job.connectionsPerServer == 1)
        try options.set(.connectionsPerServer, "1")
        var single = DownloadJob(url: "http://a/x", outputDirectory: "/dl")
        options.apply(to: &single)
        #expect(single.segments == 1)
    }

    /// The URLs of an input file's line, tab-separated, are one download's sources: blanks around each and
    /// empty fields left out; each mirror checked as a URL, the first left to the download.
    @Test func aLinesURLsAreOneDownloadsSources() throws {
        #expect(JobOptions.urls(ofLine: "http://a/x\t\thttp://b/x \t http://c/x\t") == ["http://a/x", "http://b/x", "http://c/x"])
        #expect(JobOptions.urls(ofLine: "http://a/x") == ["http://a/x"])
        let sources = try JobOptions.sources(["http://a/x", "https://user:pw@b/x"])
        #expect(sources == [DownloadSource(url: "http://a/x"), DownloadSource(url: "https://user:pw@b/x")])
        #expect(throws: JobOptions.Problem("mirror 'rsync://user:***@b/x': unsupported URL scheme \"rsync\"")) {
            try JobOptions.sources(["http://a/x", "rsync://user:pw@b/x"])
        }
        #expect(throws: JobOptions.Problem("mirror 'http://b/x?y': URL contains spaces or control characters")) {
            try JobOptions.sources(["http://a/x", "http://b/x\ny"])
        }
        #expect(try JobOptions.sources(["not a url"]).count == 1)
    }

    @Test func zeroLiftsTheRateLimit() throws {
        var options = JobOptions()
        try options.set(.maxDownloadLimit, " 0 ")
        var job = DownloadJob(url: "http://h/x", outputDirectory: "/dl")
        job.transfer.maxReceiveRate = 1024
        options.apply(to: &job)
        #expect(job.transfer.maxReceiveRate == nil)
        #expect(throws: JobOptions.Problem("limit-rate=-1 is not a rate such as 500K or 2M (0 for none)")) {
            try options.set(.limitRate, "-1")
        }
    }

    @Test func eachFaceTakesItsOwnNames() {
        let inputFile = JobOptions.Name.allCases.filter { $0.isTaken(by: .inputFile) }.map(\.rawValue)
        let aria2 = JobOptions.Name.allCases.filter { $0.isTaken(by: .aria2) }.map(\.rawValue)
        #expect(inputFile == ["out", "dir", "segments", "split", "max-connection-per-server", "header", "checksum",
                              "limit-rate", "max-download-limit", "user-agent", "referer", "sequential"])
        #expect(aria2 == ["out", "dir", "split", "max-connection-per-server", "header", "checksum",
                          "max-download-limit", "user-agent", "referer", "all-proxy", "stream-piece-selector"])
    }

    /// `--sequential` by an input file's `sequential=` and aria2's `stream-piece-selector` (`inorder` is front
    /// to back; aria2's other selectors are haul's own plan).
    @Test func sequentialByEitherName() throws {
        for (name, value, sequential) in [(JobOptions.Name.sequential, "true", true), (.sequential, "no", false),
                                          (.streamPieceSelector, "inorder", true), (.streamPieceSelector, "geom", false)] {
            var options = JobOptions()
            try options.set(name, value)
            var job = DownloadJob(url: "http://h/x", outputDirectory: "/dl")
            job.sequential = !sequential
            options.apply(to: &job)
            #expect(job.sequential == sequential, "\(name.rawValue)=\(value)")
        }
        var untouched = DownloadJob(url: "http://h/x", outputDirectory: "/dl")
        untouched.sequential = true
        JobOptions().apply(to: &untouched)
        #expect(untouched.sequential)
        var options = JobOptions()
        #expect(throws: JobOptions.Problem("stream-piece-selector=first: default, inorder, random or geom")) {
            try options.set(.streamPieceSelector, "first")
        }
        #expect(throws: JobOptions.Problem("sequential=maybe: true or false")) { try options.set(.sequential, "maybe") }
    }

    @Test func anEmptyOrUnprintableValueIsNamedInOneLine() {
        var options = JobOptions()
        #expect(throws: JobOptions.Problem("dir= needs a directory")) { try options.set(.dir, "") }
        #expect(throws: JobOptions.Problem("dir=a?b: contains NUL")) { try options.set(.dir, "a\0b") }
        #expect(throws: JobOptions.Problem("header=A: b?c: contains CR, LF or NUL")) { try options.set(.header, "A: b\rc") }
        #expect(JobOptions.shown(String(repeating: "x", count: 100)).count == 80)
    }
}
