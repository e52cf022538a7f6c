import Foundation
import Glibc
import HaulCore
import HaulServiceClient
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import TestSupport
@testable import HaulService

/// Every route of the control API (docs/protocol.md), in process: the service's own application
/// (`ServiceApplications.build`) driven by HummingbirdTesting's router client, its downloads served by an
/// in-process sample server. The end-to-end tests drive the same routes through the real binary's socket.
@Suite struct ControlRoutesTests {
    @Test func helloListAddAndStatus() async throws {
        try await withSampleServer { server in
            try await InProcessService.with { harness in
                let output = harness.output.path
                let url = server.downloadURL("small.bin")
                let ids = try await harness.clients { control, _ async throws in
                    let hello = try await control.execute(uri: "/v1/hello", method: .get)
                    #expect(hello.status == .ok)
                    #expect(hello.headers[.contentType] == "application/json")
                    #expect(try hello.decoded(Wire.Hello.self).pid == getpid())

                    #expect(try await control.execute(uri: "/v1/downloads", method: .get).decoded([Wire.Download].self).isEmpty)
                    let add = try await control.post("/v1/downloads",
                                                     Wire.AddRequest(jobs: [DownloadJob(url: url, outputDirectory: output)]))
                    #expect(add.status == .ok)
                    let added = try add.decoded(Wire.AddResponse.self).added
                    #expect(added.map(\.file) == ["small.bin"])
                    return added.map(\.id)
                }
                let id = try #require(ids.first)
                try await harness.waitFor(id, "done") { $0 == .done }
                #expect(FileManager.default.contents(atPath: harness.output.file("small.bin")) == Data(expectedBytes("small.bin")))
                let socket = await harness.service.configuration.directory.socket
                try await harness.clients { control, _ async throws in
                    let list = try await control.execute(uri: "/v1/downloads", method: .get).decoded([Wire.Download].self)
                    #expect(list.map(\.id) == [id])
                    #expect(list.first?.state == "done")
                    #expect(list.first?.completed == Int64(expectedBytes("small.bin").count))

                    let status = try await control.execute(uri: "/v1/service/status", method: .get)
                    #expect(status.status == .ok)
                    let answer = try status.decoded(Wire.Status.self)
                    #expect(answer.running && answer.pid == getpid() && answer.downloads == 1 && answer.active == 0)
                    #expect(answer.socket == socket)
                    #expect(answer.version == HaulVersion.string)
                    #expect(answer.jobs == 4 && answer.limit == nil)
                }
            }
        }
    }

    /// `pause`, `resume`, `cancel`, `retry`, `remove` on a download that runs (a slow server's), the per-download
    /// limit, and what each says of an id it does not know.
    @Test func everyVerbAndTheDownloadLimit() async throws {
        try await withSampleServer(rate: 64 << 10) { slow in
            try await InProcessService.with { harness in
                let job = DownloadJob(url: slow.downloadURL("large.bin"), outputDirectory: harness.output.path)
                let id = try await harness.clients { control, _ async throws in
                    try #require(try await control.post("/v1/downloads", Wire.AddRequest(jobs: [job]))
                        .decoded(Wire.AddResponse.self).added.first?.id)
                }
                try await harness.waitFor(id, "downloading") { $0 == .downloading }
                #expect(Service.Verb.allCases.map(\.rawValue) == ["pause", "resume", "cancel", "retry", "remove"])
                try await harness.clients { control, _ async throws in
                    let verb = { (name: String, selection: Wire.Selection) in
                        try await control.post("/v1/downloads/\(name)", selection)
                    }
                    // Running: not removed (409), nothing done.
                    let refused = try await verb("remove", Wire.Selection(ids: [id]))
                    #expect(refused.status == .conflict)
                    #expect(try refused.decoded(Wire.Failure.self).error == "download \(id) is queued or running; cancel it first")

                    let paused = try await verb("pause", Wire.Selection(ids: [id], wait: true))
                    #expect(paused.status == .ok)
                    #expect(try paused.decoded(Wire.Applied.self).ids == [id])
                    #expect(await harness.service.roster[id]?.state == .paused)

                    #expect(try await verb("resume", Wire.Selection(ids: [id])).decoded(Wire.Applied.self).ids == [id])
                    #expect(await harness.service.roster[id]?.state.isFinished == false)

                    let limit = try await control.post("/v1/downloads/limit", Wire.DownloadLimit(ids: [id], limit: 4096))
                    #expect(limit.status == .ok)
                    #expect(try limit.decoded(Wire.Applied.self).ids == [id])
                    #expect(await harness.service.roster[id]?.limit == 4096)

                    let cancelled = try await verb("cancel", Wire.Selection(all: true, wait: true))
                    #expect(try cancelled.decoded(Wire.Applied.self).ids == [id])
                    #expect(await harness.service.roster[id]?.state == .cancelled)

                    #expect(try await verb("retry", Wire.Selection(ids: [id])).decoded(Wire.Applied.self).ids == [id])
                    #expect(await harness.service.roster[id]?.state.isFinished == false)
                    _ = try await verb("cancel", Wire.Selection(ids: [id], wait: true))

                    let removed = try await verb("remove", Wire.Selection(ids: [id]))
                    #expect(try removed.decoded(Wire.Applied.self).ids == [id])
                    #expect(try await control.execute(uri: "/v1/downloads", method: .get).decoded([Wire.Download].self).isEmpty)

                    // An id it does not know: 404, named, for every verb and for the limit.
                    for name in Service.Verb.allCases.map(\.rawValue) {
                        let unknown = try await verb(name, Wire.Selection(ids: [id + 100]))
                        #expect(unknown.status == .notFound, "\(name)")
                        #expect(try unknown.decoded(Wire.Failure.self) == Wire.Failure(error: "no download with id \(id + 100)",
                                                                                          unknown: [id + 100]))
                    }
                    let unknownLimit = try await control.post("/v1/downloads/limit", Wire.DownloadLimit(ids: [id + 100], limit: nil))
                    #expect(unknownLimit.status == .notFound)
                    #expect(try unknownLimit.decoded(Wire.Failure.self).unknown == [id + 100])
                }
            }
        }
    }

    /// `POST /v1/limit` and `POST /v1/jobs` change the service's settings (as `status` shows); a count out of
    /// range is refused in words.
    @Test func theOverallLimitAndTheJobs() async throws {
        try await InProcessService.with { harness in
            try await harness.clients { control, _ async throws in
                // The overall cap is the process's libcurl's, shared with the tests that run beside this one: one
                // that slows no one (1 GiB/s), lifted again below.
                let limit = try await control.post("/v1/limit", Wire.Limit(overall: 1 << 30))
                #expect(limit.status == .ok)
                #expect(try limit.decoded(Wire.Limit.self).overall == 1 << 30)
                let jobs = try await control.post("/v1/jobs", Wire.Jobs(jobs: 2))
                #expect(jobs.status == .ok)
                #expect(try jobs.decoded(Wire.Jobs.self).jobs == 2)
                let status = try await control.execute(uri: "/v1/service/status", method: .get).decoded(Wire.Status.self)
                #expect(status.limit == 1 << 30 && status.jobs == 2)

                let range = DownloadManager.concurrencyRange
                let tooMany = try await control.post("/v1/jobs", Wire.Jobs(jobs: range.upperBound + 1))
                #expect(tooMany.status == .badRequest)
                #expect(try tooMany.decoded(Wire.Failure.self).error
                    == "jobs must be from \(range.lowerBound) to \(range.upperBound), not \(range.upperBound + 1)")
                let unlimited = try await control.post("/v1/limit", text: #"{"overall": null}"#)
                #expect(try unlimited.decoded(Wire.Limit.self).overall == nil)
                #expect(try await control.execute(uri: "/v1/service/status", method: .get).decoded(Wire.Status.self).limit == nil)
                #expect(await harness.service.manager.overallLimit == nil)
            }
        }
    }

    /// `GET /v1/events`: a snapshot of every download, then `: live`. Read in a task cancelled from the start,
    /// as a client that reads what it needs and goes: the stream gives what waited, the snapshot, then ends.
    @Test func theEventStreamStartsWithTheSnapshot() async throws {
        try await withSampleServer { server in
            try await InProcessService.with { harness in
                let output = harness.output.path
                let added = try await harness.service.add([DownloadJob(url: server.downloadURL("small.bin"), outputDirectory: output)])
                let id = try #require(added.first?.id)
                try await harness.waitFor(id, "done") { $0 == .done }
                let snapshot = await harness.service.roster.snapshot().count
                #expect(snapshot >= 2)
                let response = try await harness.clients { control, _ async throws in
                    try await withThrowingTaskGroup(of: TestResponse.self) { group in
                        group.addTask { try await control.execute(uri: "/v1/events", method: .get) }
                        group.cancelAll()
                        return try #require(try await group.next())
                    }
                }
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "text/event-stream")
                #expect(response.headers[.cacheControl] == "no-store")
                let frames = response.text.components(separatedBy: "\n\n").filter { !$0.isEmpty }
                #expect(frames.count == snapshot + 1, "\(response.text)")
                #expect(frames.last == ": live")
                for frame in frames.dropLast() {
                    #expect(frame.hasPrefix("data: {"))
                    let json = try JSONSerialization.jsonObject(with: Data(frame.dropFirst("data: ".count).utf8))
                    #expect(json is [String: Any], "\(frame)")
                }
            }
        }
    }

    /// `POST /v1/service/stop`: answered (202, no ids), then the service is asked to end.
    @Test func stopAnswersThenEnds() async throws {
        try await InProcessService.with { harness in
            let response = try await harness.clients { control, _ async throws in
                try await control.execute(uri: "/v1/service/stop", method: .post)
            }
            #expect(response.status == .accepted)
            #expect(response.headers[.contentLength] == String(response.body.readableBytes))
            #expect(try response.decoded(Wire.Applied.self).ids.isEmpty)
            #expect(await harness.service.waitForEnd() == .stopAsked)
        }
    }

    /// A body that says it is over the 64 MiB the socket takes: 413 before a byte is read. A body that is not
    /// the route's shape: 400, saying what was expected.
    @Test func largeAndBadBodies() async throws {
        try await InProcessService.with { harness in
            try await harness.clients { control, _ async throws in
                var headers = HTTPFields()
                headers[.contentLength] = String(ControlContext.maxBody + 1)
                let large = try await control.execute(uri: "/v1/downloads", method: .post, headers: headers)
                #expect(large.status == .contentTooLarge)
                #expect(try large.decoded(Wire.Failure.self).error
                    == "the request's body is larger than the 64 MiB the control socket takes")

                let shapes = [
                    ("/v1/downloads", "a list of downloads"),
                    ("/v1/downloads/pause", #"{"ids": [...]} or {"all": true}"#),
                    ("/v1/downloads/limit", #"{"ids": [...], "limit": BYTES_PER_SECOND or null}"#),
                    ("/v1/limit", #"{"overall": BYTES_PER_SECOND or null}"#),
                    ("/v1/jobs", #"{"jobs": N}"#),
                ]
                for (uri, shape) in shapes {
                    let bad = try await control.post(uri, text: #"{"jobs": "many""#)
                    #expect(bad.status == .badRequest, "\(uri)")
                    #expect(try bad.decoded(Wire.Failure.self).error == "the body is not \(shape)", "\(uri)")
                }
            }
        }
    }

    /// The peer check: another user's request is refused (403) on every route, and so is one whose peer
    /// cannot be read: the kernel's reader, `SO_PEERCRED`, finds no socket under the router client.
    @Test func anotherUserIsRefused() async throws {
        let otherUser = PeerIdentity { _ in geteuid() &+ 1 }
        for (peer, message) in [(otherUser, "this service belongs to another user"),
                                (PeerIdentity.socketCredentials, "the peer's credentials cannot be read")] {
            try await InProcessService.with(peer: peer) { harness in
                try await harness.clients { control, _ async throws in
                    for (uri, method) in [("/v1/hello", HTTPRequest.Method.get), ("/v1/downloads", .get),
                                          ("/v1/service/stop", .post), ("/v1/events", .get)] {
                        let refused = try await control.execute(uri: uri, method: method)
                        #expect(refused.status == .forbidden, "\(uri)")
                        #expect(try refused.decoded(Wire.Failure.self).error == message)
                    }
                }
                #expect(await harness.service.attached == 0)
            }
        }
    }
}
