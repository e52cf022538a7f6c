import Foundation
import HaulCore
import HaulServiceClient
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing
import TestSupport
@testable import HaulService

/// The waiting queue's order: `POST /v1/downloads/move` (`haul move`), aria2's `changePosition` on the same
/// order, what `tellWaiting` lists, the `moved` events clients get, and the order kept in the store across a
/// restart of the service, where it decides which waiting download starts first.
@Suite struct QueueOrderTests {
    /// A service on the state directory `state` (a second one on the same directory is the service started
    /// again: it restores the stored queue first), its event pipeline running. Its downloads are added paused
    /// and nothing runs, so at the end it stops as `haul service stop` leaves a queue: nothing cancelled.
    static func withService<T: Sendable>(state: TempDirectory, concurrency: Int = 4,
                                         _ body: (Service, ServiceApplications) async throws -> T) async throws -> T {
        let directory = StateDirectory(path: state.path)
        try directory.prepare()
        let store = try Store(directory: directory.path)
        var configuration = Service.Configuration(directory: directory)
        configuration.idleExit = nil
        configuration.concurrency = concurrency
        configuration.rpc = RPCConfiguration(host: "127.0.0.1", port: 0, secretFile: directory.rpcSecret,
                                             outputDirectory: state.path)
        let service = Service(configuration: configuration, store: store)
        _ = try await service.restore()
        let quiet = Logger(label: "queue order", factory: { _ in SwiftLogNoOpLogHandler() })
        let applications = try ServiceApplications.build(service: service, peer: InProcessService.thisUser, logger: quiet)
        let recorder = Recorder(writer: StoreWriter(store: store, clock: ContinuousClock()))
        let result: Result<T, any Error> = try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask(executorPreference: IOExecutor.shared) {
                await ServiceRunner.recordEvents(of: service, into: recorder)
            }
            let result: Result<T, any Error>
            do { result = .success(try await body(service, applications)) } catch { result = .failure(error) }
            await service.detachAll()
            await service.manager.pauseAll()
            await service.manager.waitUntilIdle()
            await service.manager.finishEvents()
            try await group.waitForAll()
            return result
        }
        try store.close()
        return try result.get()
    }

    /// Four downloads that wait, paused: by default to an address nothing listens on (not started here).
    static func addFour(to service: Service, url: (Int) -> String = { "http://127.0.0.1:9/\($0).bin" },
                        output: String = "/tmp") async throws -> [DownloadID] {
        let jobs = (1...4).map { DownloadJob(url: url($0), outputDirectory: output) }
        return try await service.add(jobs, paused: true).map(\.id)
    }

    static func move(_ id: DownloadID, _ place: String, on control: any TestClientProtocol) async throws -> TestResponse {
        try await control.post("/v1/downloads/move", text: "{\"id\": \(id), \"to\": \"\(place)\"}")
    }

    @Test func movesThroughTheControlAPIAndChangePositionAreOneOrderThatSurvivesARestart() async throws {
        let state = TempDirectory()
        let (ids, gids) = try await Self.withService(state: state) { service, applications in
            let ids = try await Self.addFour(to: service)
            let gids = await ids.asyncMap { await service.roster[$0]?.gid ?? "" }
            let secret = try String(contentsOfFile: await service.configuration.directory.rpcSecret, encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let rpc = try #require(applications.rpc)
            try await applications.control.test(.router) { control in
                let top = try await Self.move(ids[3], "top", on: control)
                #expect(top.status == .ok)
                #expect(try top.decoded(Wire.Moved.self) == Wire.Moved(id: ids[3], position: 0))
                #expect(await service.roster.waiting == [ids[3], ids[0], ids[1], ids[2]])
                #expect(try await Self.move(ids[0], "down", on: control).decoded(Wire.Moved.self).position == 2)
                #expect(try await Self.move(ids[1], "up", on: control).decoded(Wire.Moved.self).position == 0)
                // Already last: it stays.
                #expect(try await Self.move(ids[2], "bottom", on: control).decoded(Wire.Moved.self).position == 3)
                #expect(await service.roster.waiting == [ids[1], ids[3], ids[0], ids[2]])

                try await rpc.test(.router) { client in
                    let aria2 = Aria2Caller(client: client, secret: secret)
                    // aria2's answers: the position it went to, clamped to the queue.
                    #expect(try await aria2.call("aria2.changePosition", [gids[2], 0, "POS_SET"]).result as? Int == 0)
                    #expect(try await aria2.call("aria2.changePosition", [gids[2], 1, "POS_CUR"]).result as? Int == 1)
                    #expect(try await aria2.call("aria2.changePosition", [gids[1], 0, "POS_END"]).result as? Int == 3)
                    #expect(try await aria2.call("aria2.changePosition", [gids[3], -10, "POS_CUR"]).result as? Int == 0)
                    let listed = try await aria2.call("aria2.tellWaiting", [0, 10, ["gid"]]).list as? [[String: String]]
                    #expect(listed?.map { $0["gid"] } == [gids[3], gids[2], gids[0], gids[1]])
                }
            }
            #expect(await service.roster.waiting == [ids[3], ids[2], ids[0], ids[1]])
            return (ids, gids)
        }
        // Started again: the same order, from the store.
        try await Self.withService(state: state) { service, applications in
            #expect(await service.roster.waiting == [ids[3], ids[2], ids[0], ids[1]])
            #expect(await ids.asyncMap { await service.roster[$0]?.gid ?? "" } == gids)
            // A client attaching now builds the same queue from its snapshot (the `moved` events at its end).
            let subscription = await service.subscribe()
            var queue = QueueOrder()
            var states: [DownloadID: DownloadState] = [:]
            for event in subscription.events.takeWaiting() {
                queue.apply(event, before: states[event.downloadID])
                if case .state(let id, let state) = event { states[id] = state }
            }
            await service.unsubscribe(subscription)
            #expect(queue.ids == [ids[3], ids[2], ids[0], ids[1]])
        }
    }

    /// Which waiting download starts next is the queue's first: with one download at a time, resuming them
    /// all starts the one moved to the top, not the oldest; after a restart too.
    @Test func theFirstOfTheQueueStartsFirst() async throws {
        let state = TempDirectory()
        let output = TempDirectory()
        func firstToStart(_ service: Service) async throws -> DownloadID? {
            let subscription = await service.subscribe()
            _ = await service.perform(.resume, on: Wire.Selection(all: true))
            let first = try await within(10, "a download to start") { () async -> DownloadID? in
                while let batch = await subscription.events.next() {
                    for case .state(let id, .connecting) in batch { return id }
                }
                return nil
            }
            await service.unsubscribe(subscription)
            return first
        }
        // A slow server: the one that starts still runs when the service stops (paused then, and kept first).
        try await withSampleServer(rate: 64 << 10) { slow in
            let ids = try await Self.withService(state: state, concurrency: 1) { service, applications in
                let ids = try await Self.addFour(to: service, url: { _ in slow.downloadURL("medium.bin") },
                                                 output: output.path)
                let moved = try await applications.control.test(.router) { control in
                    try await Self.move(ids[2], "top", on: control).status
                }
                #expect(moved == .ok)
                let first = try await firstToStart(service)
                #expect(first == ids[2])
                return ids
            }
            try await Self.withService(state: state, concurrency: 1) { service, _ in
                #expect(await service.roster.waiting.first == ids[2])
                let first = try await firstToStart(service)
                #expect(first == ids[2])
            }
        }
    }

    @Test func aDownloadThatDoesNotWaitIsNotMovedAndAnUnknownOneIsNamed() async throws {
        let state = TempDirectory()
        try await Self.withService(state: state) { service, applications in
            let ids = try await Self.addFour(to: service)
            _ = await service.perform(.cancel, on: Wire.Selection(ids: [ids[0]]))
            try await applications.control.test(.router) { control in
                let refused = try await Self.move(ids[0], "top", on: control)
                #expect(refused.status == .conflict)
                #expect(try refused.decoded(Wire.Failure.self).error
                    == "download \(ids[0]) is not waiting in the queue (it is cancelled); only a queued or paused download moves")
                let unknown = try await Self.move(999, "up", on: control)
                #expect(unknown.status == .notFound)
                #expect(try unknown.decoded(Wire.Failure.self) == Wire.Failure(error: "no download with id 999", unknown: [999]))
                let bad = try await Self.move(ids[1], "sideways", on: control)
                #expect(bad.status == .badRequest)
            }
            #expect(await service.roster.waiting == Array(ids[1...]))
        }
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
