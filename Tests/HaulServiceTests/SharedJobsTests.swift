import Foundation
import HaulCore
import HaulServiceClient
import Hummingbird
import Logging
import NIOCore
import NIOConcurrencyHelpers
import Testing
import TestSupport
@testable import HaulService

/// A long `-i` list goes to the service, and into its store, as one job's options and the URLs, not as a
/// whole job a line; what arrives and what is stored is the same as before, job for job.
@Suite struct SharedJobsTests {
    /// Runs of jobs with the same options, one that differs, and the first options again; URLs that JSON
    /// must escape.
    static func jobs() -> [DownloadJob] {
        var plain = DownloadJob(url: "", outputDirectory: "/tmp/out")
        plain.headers = ["Accept: */*"]
        var other = plain
        other.segments = 4
        other.checksum = try? Checksum.parse("sha256=" + String(repeating: "a", count: 64)).get()
        let urls = ["http://127.0.0.1:8080/a.bin", "http://h/q?x=\"1\"&y=\\2", "http://h/caf\u{e9}/\u{1F4E6}.bin",
                    "http://h/s p/%20.bin", "https://alice:***@h/private.pdf"]
        var jobs: [DownloadJob] = []
        for (index, url) in urls.enumerated() {
            var job = plain
            job.url = url
            jobs.append(job)
            if index == 2 {
                var odd = other
                odd.url = url + "?odd"
                jobs.append(odd)
            }
        }
        for index in 0 ..< 300 {
            var job = plain
            job.url = "http://127.0.0.1:8080/s\(index).bin"
            jobs.append(job)
        }
        return jobs
    }

    static func object(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func aListGoesAsItsOptionsOnceAndItsURLs() throws {
        var same: [DownloadJob] = []
        for index in 0 ..< 1000 {
            same.append(DownloadJob(url: "http://127.0.0.1:8080/s\(index).bin", outputDirectory: "/tmp/out"))
        }
        let data = Wire.encode(Wire.AddRequest(jobs: same))
        let body = try Self.object(data)
        #expect(body.keys.sorted() == ["shared", "urls"], "one shared job: no uses")
        #expect((body["shared"] as? [Any])?.count == 1)
        #expect((body["urls"] as? [String])?.count == 1000)
        #expect(try Wire.decode(Wire.AddRequest.self, from: data).jobs == same)
        // Against one whole job a line, as before.
        let whole = try JSONEncoder().encode(["jobs": same])
        #expect(data.count * 3 < whole.count)
    }

    @Test func runsOfOptionsComeBackJobForJob() throws {
        let jobs = Self.jobs()
        let data = Wire.encode(Wire.AddRequest(jobs: jobs))
        let body = try Self.object(data)
        // plain, odd, plain again: three runs.
        #expect((body["shared"] as? [Any])?.count == 3)
        #expect((body["uses"] as? [Int])?.count == jobs.count)
        #expect(try Wire.decode(Wire.AddRequest.self, from: data).jobs == jobs)
        #expect(try Wire.decode(Wire.AddRequest.self, from: Wire.encode(Wire.AddRequest(jobs: []))).jobs == [])
    }

    /// What older clients send, and the documented form: whole jobs.
    @Test func wholeJobsAreReadAsBefore() throws {
        let jobs = Self.jobs()
        let data = try JSONEncoder().encode(["jobs": jobs])
        #expect(try Wire.decode(Wire.AddRequest.self, from: data).jobs == jobs)
    }

    @Test func aSharedFormThatDoesNotAddUpIsRefused() {
        let job = #"{"url":"","outputDirectory":"/tmp"}"#
        for body in [
            #"{"shared":[\#(job)],"urls":["http://h/a","http://h/b"],"uses":[0]}"#,  // a URL without its entry
            #"{"shared":[\#(job)],"urls":["http://h/a"],"uses":[1]}"#,  // no shared job 1
            #"{"shared":[\#(job),\#(job)],"urls":["http://h/a"]}"#,  // two shared, no uses
            #"{"shared":[],"urls":["http://h/a"]}"#,
            #"{"urls":["http://h/a"]}"#,
        ] {
            #expect(throws: (any Error).self, "\(body)") { try Wire.decode(Wire.AddRequest.self, from: Data(body.utf8)) }
        }
    }

    /// The store writes each job's text as it did one by one: the same bytes, which read back as the job.
    @Test func theStoresTextIsTheOneJobAtATimeText() throws {
        var encoder = WithheldJob.Encoder()
        let oneByOne = WithheldJob.encoder()
        var secret = Self.jobs()[0]
        secret.url = "https://bob:pw-9f1c@h/a.bin"
        secret.headers.append("Authorization: Bearer x")
        for job in Self.jobs() + [secret, secret, Self.jobs()[1]] {
            let withheld = WithheldJob(job)
            let text = try encoder.encode(withheld)
            #expect(text == (try withheld.encoded(with: oneByOne)))
            #expect(try WithheldJob.decoded(text) == withheld.job)
        }
    }

    @Test func aLongListIsStoredWhole() throws {
        let directory = TempDirectory()
        let store = try Store(directory: directory.path)
        let jobs = Self.jobs()
        let ids = try store.insert(jobs.map { ($0, $0.plannedName) }, added: StoreFixtures.time(0))
        #expect(ids.count == jobs.count)
        for (id, job) in zip(ids, jobs) {
            let row = try #require(try store.find(id))
            #expect(try row.job == WithheldJob(job).job)
        }
    }

    /// A service of before the shared form (it reads `{"jobs": [...]}` only and refuses anything else as a
    /// bad request) still gets the whole list, with every option, from this client.
    @Test func aServiceOfBeforeGetsWholeJobs() async throws {
        let directory = TempDirectory()
        let state = StateDirectory(path: directory.path)
        struct Whole: Codable { var jobs: [DownloadJob] }
        let received = ReceivedJobs()
        let router = Router()
        router.get("v1/hello") { _, _ in JSONResponse(Wire.Hello(pid: getpid())) }
        router.post("v1/downloads") { request, context -> Response in
            guard let body = try? await request.decode(as: Whole.self, context: context) else {
                return Response(status: .badRequest, body: .init(byteBuffer: .init(string: #"{"error":"not jobs"}"#)))
            }
            received.set(body.jobs)
            let added = body.jobs.enumerated().map { Wire.Added(id: $0.offset + 1, file: "f\($0.offset)") }
            return JSONResponse(Wire.AddResponse(added: added)).response
        }
        let (listening, listeningSink) = AsyncStream<Void>.makeStream()
        var quiet = Logger(label: "a service of before")
        quiet.logLevel = .critical
        let app = Application(router: router, configuration: .init(address: .unixDomainSocket(path: state.socket)),
                              onServerRunning: { _ in listeningSink.yield() }, logger: quiet)
        let jobs = Self.jobs()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService() }
            var waiting = listening.makeAsyncIterator()
            await waiting.next()
            let client = ServiceClient(directory: state)
            let added = try await client.add(jobs)
            #expect(added.count == jobs.count)
            #expect(received.jobs == jobs)
            group.cancelAll()
        }
    }
}

private final class ReceivedJobs: Sendable {
    private let box = NIOLockedValueBox<[DownloadJob]>([])
    func set(_ jobs: [DownloadJob]) { box.withLockedValue { $0 = jobs } }
    var jobs: [DownloadJob] { box.withLockedValue { $0 } }
}

/// A JSON body for a test route.
private struct JSONResponse<T: Encodable>: ResponseGenerator {
    let value: T
    init(_ value: T) { self.value = value }
    var response: Response {
        Response(status: .ok, headers: [.contentType: "application/json"],
                 body: .init(byteBuffer: ByteBuffer(bytes: Array(Wire.encode(value)))))
    }
    func response(from request: Request, context: some RequestContext) throws -> Response { response }
}
