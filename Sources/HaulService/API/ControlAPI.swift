import Foundation
import HaulCore
import HaulServiceClient
import Hummingbird
import NIOCore

/// The request context of the control socket: it keeps the connection's channel, whose peer credentials
/// say which user is at the other end.
struct ControlContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// A long `-i` list is added in one request.
    static let maxBody = 64 << 20
    var maxUploadSize: Int { Self.maxBody }
}

/// Refuses a body that says it is larger than the control socket takes (413) before a byte of it is read; one
/// that does not say (chunked) is refused as it passes the limit (`ControlAPI.unreadable`).
struct BodyLimit: RouterMiddleware {
    typealias Context = ControlContext

    func handle(_ request: Request, context: ControlContext,
                next: (Request, ControlContext) async throws -> Response) async throws -> Response {
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > ControlContext.maxBody {
            return ControlAPI.tooLarge
        }
        return try await next(request, context)
    }
}

/// `struct ucred` of `SO_PEERCRED`: three 32-bit fields.
struct PeerCredentials: Sendable {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}

/// Who is at the other end of a request's connection: the uid of the peer's process, nil when it cannot be
/// read. The service asks the kernel (`socketCredentials`); a test in process, which has no socket, says.
struct PeerIdentity: Sendable {
    let uid: @Sendable (ControlContext) async -> UInt32?

    init(uid: @escaping @Sendable (ControlContext) async -> UInt32?) {
        self.uid = uid
    }

    /// `SO_PEERCRED` of the connection's Unix socket: the uid the peer had when it connected.
    static let socketCredentials = PeerIdentity { context in
        guard let provider = context.channel as? any SocketOptionProvider else { return nil }
        let future: EventLoopFuture<PeerCredentials> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        return try? await future.get().uid
    }
}

/// Refuses a peer of another user (403), whatever the socket file's mode: the directory's 0700 keeps
/// others out, and this is the second line. A peer whose credentials cannot be read is refused too.
struct SameUserOnly: RouterMiddleware {
    typealias Context = ControlContext
    let uid = geteuid()
    let peer: PeerIdentity

    func handle(_ request: Request, context: ControlContext,
                next: (Request, ControlContext) async throws -> Response) async throws -> Response {
        guard let peerUID = await peer.uid(context) else {
            return ControlAPI.failure(.forbidden, "the peer's credentials cannot be read")
        }
        guard peerUID == uid else {
            return ControlAPI.failure(.forbidden, "this service belongs to another user")
        }
        return try await next(request, context)
    }
}

/// The routes of the control API (docs/protocol.md): JSON in and out, events as server-sent events.
enum ControlAPI {
    /// `peer`: who is at the other end of a request (the kernel's word in the service).
    static func router(service: Service, socket: String, peer: PeerIdentity) -> Router<ControlContext> {
        let router = Router(context: ControlContext.self)
        router.add(middleware: SameUserOnly(peer: peer))
        router.add(middleware: BodyLimit())
        let v1 = router.group("v1")
        v1.get("hello") { _, _ in json(Wire.Hello(pid: getpid())) }
        addDownloadRoutes(to: v1, service: service)
        addServiceRoutes(to: v1, service: service, socket: socket)
        return router
    }

    /// `/v1/downloads`: the list, adding, the verbs and the per-download limit.
    private static func addDownloadRoutes(to v1: RouterGroup<ControlContext>, service: Service) {
        v1.get("downloads") { _, _ in json(await service.list()) }
        v1.post("downloads") { request, context in
            let body: Wire.AddRequest
            do { body = try await request.decode(as: Wire.AddRequest.self, context: context) } catch {
                return unreadable(error, expected: "a list of downloads")
            }
            do {
                return json(Wire.AddResponse(added: try await service.add(body.jobs)))
            } catch {
                return failure(.internalServerError, (error as? StoreError)?.message ?? "\(error)")
            }
        }
        for verb in Service.Verb.allCases {
            v1.post("downloads/\(verb.rawValue)") { request, context in
                let selection: Wire.Selection
                do { selection = try await request.decode(as: Wire.Selection.self, context: context) } catch {
                    return unreadable(error, expected: "{\"ids\": [...]} or {\"all\": true}")
                }
                switch await service.perform(verb, on: selection) {
                case .success(let ids): return json(Wire.Applied(ids: ids))
                case .failure(let problem):
                    return json(problem, status: problem.unknown == nil ? .conflict : .notFound)
                }
            }
        }
        v1.post("downloads/remove-files") { request, context in
            let selection: Wire.Selection
            do { selection = try await request.decode(as: Wire.Selection.self, context: context) } catch {
                return unreadable(error, expected: "{\"ids\": [...]} or {\"all\": true}")
            }
            switch await service.removeFiles(selection) {
            case .success(let removal): return json(removal)
            case .failure(let problem): return json(problem, status: .notFound)
            }
        }
        v1.post("downloads/refresh") { request, context in
            let body: Wire.Refresh
            do { body = try await request.decode(as: Wire.Refresh.self, context: context) } catch {
                return unreadable(error, expected: "{\"id\": ID, \"url\": URL}")
            }
            switch await service.refresh(body.id, to: body.url) {
            case .success(let refreshed): return json(refreshed)
            case .failure(let failure): return json(failure, status: .conflict)
            }
        }
        v1.post("downloads/move") { request, context in
            let body: Wire.Move
            do { body = try await request.decode(as: Wire.Move.self, context: context) } catch {
                return unreadable(error, expected: "{\"id\": ID, \"to\": \"top\", \"up\", \"down\" or \"bottom\"}")
            }
            switch await service.move(body.id, to: body.to) {
            case .success(let position): return json(Wire.Moved(id: body.id, position: position))
            case .failure(let problem): return json(problem, status: problem.unknown == nil ? .conflict : .notFound)
            }
        }
        v1.post("downloads/limit") { request, context in
            let body: Wire.DownloadLimit
            do { body = try await request.decode(as: Wire.DownloadLimit.self, context: context) } catch {
                return unreadable(error, expected: "{\"ids\": [...], \"limit\": BYTES_PER_SECOND or null}")
            }
            switch await service.setLimit(body.ids, body.limit) {
            case .success(let ids): return json(Wire.Applied(ids: ids))
            case .failure(let problem): return json(problem, status: .notFound)
            }
        }
    }

    /// The event stream, and what concerns the whole service: its status, limit, jobs and stop.
    private static func addServiceRoutes(to v1: RouterGroup<ControlContext>, service: Service, socket: String) {
        v1.get("events") { _, context in
            let subscription = await service.subscribe()
            // A client that goes (q, a closed terminal) is let go at once, not at the next event: the
            // service's idle exit counts the clients attached.
            context.channel.closeFuture.whenComplete { _ in Task { await service.unsubscribe(subscription) } }
            var headers = HTTPFields()
            headers[.contentType] = "text/event-stream"
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                var frames = EventStreamFrames(snapshot: subscription.snapshot)
                while let batch = await subscription.events.next() {
                    for write in frames.writes(for: batch) { try await writer.write(write) }
                }
                try await writer.finish(nil)
            })
        }
        v1.get("service/status") { _, _ in json(await service.status(socket: socket)) }
        v1.post("limit") { request, context in
            let body: Wire.Limit
            do { body = try await request.decode(as: Wire.Limit.self, context: context) } catch {
                return unreadable(error, expected: "{\"overall\": BYTES_PER_SECOND or null}")
            }
            await service.setOverallLimit(body.overall)
            return json(body)
        }
        v1.post("jobs") { request, context in
            let body: Wire.Jobs
            do { body = try await request.decode(as: Wire.Jobs.self, context: context) } catch {
                return unreadable(error, expected: "{\"jobs\": N}")
            }
            let range = DownloadManager.concurrencyRange
            guard range.contains(body.jobs) else {
                return failure(.badRequest, "jobs must be from \(range.lowerBound) to \(range.upperBound), not \(body.jobs)")
            }
            await service.setConcurrency(body.jobs)
            return json(body)
        }
        v1.post("service/stop") { _, _ in
            // Answered first, stopped after: asked before the answer was written, the stop could close the
            // listener and this connection with the answer unsent (a quick start then stop failed about one
            // time in ten with an empty reply). The service pauses what runs and ends after it.
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            var answer = ByteBuffer(bytes: Wire.encode(Wire.Applied(ids: [])))
            answer.writeString("\n")
            headers[.contentLength] = String(answer.readableBytes)
            return Response(status: .accepted, headers: headers, body: ResponseBody { [answer] writer in
                try await writer.write(answer)
                try await writer.finish(nil)
                await service.requestStop()
            })
        }
    }

    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        var body = ByteBuffer(bytes: Wire.encode(value))
        body.writeString("\n")
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: body))
    }

    static var tooLarge: Response {
        failure(.contentTooLarge, "the request's body is larger than the \(ControlContext.maxBody >> 20) MiB the control socket takes")
    }

    /// The answer to a body that could not be read as `shape`: too large (413), or not of that shape (400),
    /// said in words, never as an internal type's name.
    static func unreadable(_ error: any Error, expected shape: String) -> Response {
        if error is NIOTooManyBytesError { return tooLarge }
        return failure(.badRequest, "the body is not \(shape)")
    }

    static func failure(_ status: HTTPResponse.Status, _ message: String) -> Response {
        json(Wire.Failure(error: message), status: status)
    }
}

/// The bytes of `GET /v1/events` (docs/protocol.md): each event a server-sent event (`data: JSON` and a blank
/// line), the snapshot's end marked by the comment `: live`. Cut into writes: each batch of events (what
/// came while the last write was under way) in one write, and a long one (the snapshot of a big queue) in
/// writes of about `writeSize`.
struct EventStreamFrames {
    static let writeSize = 1 << 16
    /// How many of the first events are the snapshot.
    let snapshot: Int
    private var sent = 0
    private let encoder = Wire.encoder()

    init(snapshot: Int) {
        self.snapshot = snapshot
    }

    /// What to write for `events`, the next ones of the stream, in order.
    mutating func writes(for events: [ManagerEvent]) -> [ByteBuffer] {
        var writes: [ByteBuffer] = []
        var buffer = ByteBuffer()
        if sent == 0 && snapshot == 0 { buffer.writeString(": live\n\n") }
        for event in events {
            buffer.writeString("data: ")
            buffer.writeBytes(event.json(with: encoder))
            buffer.writeString("\n\n")
            sent += 1
            if sent == snapshot { buffer.writeString(": live\n\n") }
            if buffer.readableBytes >= Self.writeSize {
                writes.append(buffer)
                buffer = ByteBuffer()
            }
        }
        if buffer.readableBytes > 0 { writes.append(buffer) }
        return writes
    }
}
