import Foundation
import Glibc
import HaulCore
import HaulServiceClient
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing
import TestSupport
@testable import HaulService

/// A service as `haul service run` makes it, in this process: its store in a temp dir, its event pipeline
/// running (`ServiceRunner.recordEvents`), and its faces built by `ServiceApplications.build`, the aria2 one
/// included, for HummingbirdTesting's router client to drive. No socket is bound and no port is opened.
struct InProcessService: Sendable {
    let service: Service
    let applications: ServiceApplications
    /// The aria2 face's secret (made in the state directory, as the service makes it).
    let secret: String
    /// Where downloads go (the aria2 face's `dir`).
    let output: TempDirectory

    /// The peer of every request is this user: what `SO_PEERCRED` says of a client of the same user.
    static let thisUser = PeerIdentity { _ in geteuid() }

    /// Runs `body` against a new service whose control API sees each request's peer as `peer` says, then
    /// stops the service's downloads and its event pipeline and closes its store.
    static func with<T: Sendable>(peer: PeerIdentity = thisUser, clock: ServiceClock = .system,
                                  configure: (inout Service.Configuration) -> Void = { _ in },
                                  _ body: (InProcessService) async throws -> T) async throws -> T {
        let state = TempDirectory()
        let output = TempDirectory()
        let directory = StateDirectory(path: state.path)
        try directory.prepare()
        let store = try Store(directory: directory.path)
        var configuration = Service.Configuration(directory: directory)
        configuration.idleExit = nil
        configuration.rpc = RPCConfiguration(host: "127.0.0.1", port: 0, secretFile: directory.rpcSecret,
                                             outputDirectory: output.path)
        configure(&configuration)
        let service = Service(configuration: configuration, store: store, clock: clock)
        let quiet = Logger(label: "in-process service", factory: { _ in SwiftLogNoOpLogHandler() })
        let applications = try ServiceApplications.build(service: service, peer: peer, logger: quiet)
        let secret = try String(contentsOfFile: directory.rpcSecret, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let recorder = Recorder(writer: StoreWriter(store: store, clock: ContinuousClock()))
        await service.holdNamesUntilStored()
        await service.followMetalinks()
        let harness = InProcessService(service: service, applications: applications, secret: secret, output: output)
        let result: Result<T, any Error>
        do {
            result = try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask(executorPreference: IOExecutor.shared) {
                    await ServiceRunner.recordEvents(of: service, into: recorder, committingOn: ContinuousClock())
                }
                let result: Result<T, any Error>
                do { result = .success(try await body(harness)) } catch { result = .failure(error) }
                // As a stop ends: no download runs on, the clients are let go, the store holds every event.
                await service.detachAll()
                await service.manager.cancelAll()
                await service.manager.waitUntilIdle()
                await service.manager.finishEvents()
                try await group.waitForAll()
                return result
            }
        }
        try store.close()
        withExtendedLifetime(state) {}
        return try result.get()
    }

    /// Runs `body` with router clients of the control API and of the aria2 face.
    func clients<T: Sendable>(_ body: @escaping @Sendable (any TestClientProtocol, Aria2Caller) async throws -> T)
        async throws -> T
    {
        let rpc = try #require(applications.rpc)
        let secret = secret
        return try await applications.control.test(.router) { control in
            try await rpc.test(.router) { aria2 in
                try await body(control, Aria2Caller(client: aria2, secret: secret))
            }
        }
    }

    /// The download the aria2 face knows as `gid`.
    func id(of gid: String) async throws -> DownloadID {
        try #require(await service.roster.ids[gid], "no download with GID \(gid)")
    }

    /// Returns once download `id` is in a state `matching` takes: the roster's now, or one of its events
    /// after (waited for, without polling, on a subscription as a client's).
    func waitFor(_ id: DownloadID, _ what: String, within seconds: Double = 10,
                 _ matching: @escaping @Sendable (DownloadState) -> Bool)
        async throws
    {
        let service = service
        let subscription = await service.subscribe()
        do {
            try await within(seconds, "download \(id) to be \(what)") {
                if let state = await service.roster[id]?.state, matching(state) { return }
                while let batch = await subscription.events.next() {
                    for event in batch {
                        if case .state(let changed, let state) = event, changed == id, matching(state) { return }
                    }
                }
                throw StreamEnded()
            }
        } catch {
            await service.unsubscribe(subscription)
            throw error
        }
        await service.unsubscribe(subscription)
    }

    /// Returns once download `id` is paused and its task has ended: a pause says `.paused` at once, while the
    /// task still winds down, and until it has, the download's options cannot change and a cancel (aria2's
    /// `remove`) is not taken.
    func waitUntilPaused(_ id: DownloadID) async throws {
        try await waitFor(id, "paused") { $0 == .paused }
        await service.manager.waitUntilStopped([id])
    }

    struct StreamEnded: Error {}
}

/// Calls of the aria2 face's methods through a router client, as a JSON-RPC client posts them.
struct Aria2Caller: Sendable {
    let client: any TestClientProtocol
    let secret: String

    struct Answer {
        var status: Int
        var document: Any

        var body: [String: Any] { document as? [String: Any] ?? [:] }
        var result: Any? { body["result"] }
        var string: String? { result as? String }
        var object: [String: Any] { result as? [String: Any] ?? [:] }
        var list: [Any] { result as? [Any] ?? [] }
        var errorCode: Int? { (body["error"] as? [String: Any])?["code"] as? Int }
        var errorMessage: String? { (body["error"] as? [String: Any])?["message"] as? String }
    }

    /// `method` with the secret (`token` nil) or with `token:TOKEN` (an empty one: no token at all).
    func call(_ method: String, _ params: [Any] = [], token: String? = nil) async throws -> Answer {
        let token = token ?? secret
        let document: [String: Any] = ["jsonrpc": "2.0", "id": "t", "method": method,
                                       "params": (token.isEmpty ? [] : ["token:" + token]) + params]
        return try await post(try JSONSerialization.data(withJSONObject: document))
    }

    func post(_ body: Data) async throws -> Answer {
        let response = try await client.execute(uri: "/jsonrpc", method: .post, body: ByteBuffer(bytes: body))
        return try Self.answer(response)
    }

    static func answer(_ response: TestResponse) throws -> Answer {
        #expect(response.headers[.contentType] == "application/json-rpc")
        let document = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView))
        return Answer(status: Int(response.status.code), document: document)
    }
}

extension TestClientProtocol {
    /// POSTs `value` as the control API's JSON.
    func post(_ uri: String, _ value: some Encodable) async throws -> TestResponse {
        try await execute(uri: uri, method: .post, body: ByteBuffer(bytes: Wire.encode(value)))
    }

    /// POSTs `text` as it is.
    func post(_ uri: String, text: String) async throws -> TestResponse {
        try await execute(uri: uri, method: .post, body: ByteBuffer(string: text))
    }
}

extension TestResponse {
    /// The body as the control API's `type`.
    func decoded<T: Decodable>(_ type: T.Type) throws -> T {
        try Wire.decode(type, from: Data(body.readableBytesView))
    }

    var text: String { String(buffer: body) }
}
