import Foundation
import HaulCore
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import HummingbirdWebSocket
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// Who may talk to the aria2 face: the checks that aria2 itself lacks (it checks neither `Host` nor
/// `Origin`, so any web page can drive it).
struct RPCRequestPolicy: Sendable {
    /// The address it listens on.
    var host: String
    /// The port it listens on: the one asked for, or the kernel's choice once bound (when asked for 0).
    var port: Int { boundPort.withLockedValue { $0 } }
    private let boundPort: NIOLockedValueBox<Int>
    /// Listening beyond loopback: any `Host` is taken (the user chose to be reached by other names).
    var allowRemote: Bool
    /// Web origins allowed besides none and browser extensions; `null` only when listed.
    var origins: [String]

    init(host: String, port: Int, allowRemote: Bool, origins: [String]) {
        self.host = host
        boundPort = NIOLockedValueBox(port)
        self.allowRemote = allowRemote
        self.origins = origins
    }

    /// The port the kernel chose.
    func bound(to port: Int) {
        boundPort.withLockedValue { $0 = port }
    }
    /// DNS rebinding: a page of `evil.example` whose name now points at 127.0.0.1 still sends
    /// `Host: evil.example`. Only the loopback names and the listening address are taken, with or without
    /// the port.
    func allowsHost(_ authority: String?) -> Bool {
        if allowRemote { return true }
        guard let authority, !authority.isEmpty else { return false }
        var name = authority.lowercased()
        if name.hasPrefix("[") {
            guard let close = name.firstIndex(of: "]") else { return false }
            let rest = name[name.index(after: close)...]
            guard rest.isEmpty || rest == ":\(port)" else { return false }
            name = String(name[name.index(after: name.startIndex)..<close])
        } else if let colon = name.lastIndex(of: ":") {
            guard name[name.index(after: colon)...] == "\(port)" else { return false }
            name = String(name[..<colon])
        }
        return name == "localhost" || name == "127.0.0.1" || name == "::1" || name == host.lowercased()
    }

    /// No Origin (scripts, curl), a browser extension, the listening address's own origin, or a configured
    /// origin.
    func allowsOrigin(_ origin: String?) -> Bool {
        guard let origin else { return true }
        let lower = origin.lowercased()
        for scheme in ["chrome-extension://", "moz-extension://", "safari-web-extension://", "ms-browser-extension://"]
        where lower.hasPrefix(scheme) && lower.count > scheme.count {
            return true
        }
        let trimmed = lower.hasSuffix("/") ? String(lower.dropLast()) : lower
        return isOwnOrigin(trimmed) || origins.contains { $0.lowercased() == trimmed || $0.lowercased() + "/" == lower }
    }

    /// `http://HOST:PORT` of the bound address, or of `localhost` (`https://` too): what Python's
    /// websocket-client, under aria2p's notification listener, sends by default. No page is served from
    /// there, so no foreign page can send it.
    private func isOwnOrigin(_ origin: String) -> Bool {
        let port = port
        let name = host.lowercased()
        let names = [name.contains(":") && !name.hasPrefix("[") ? "[\(name)]" : name, "localhost"]
        for scheme in ["http", "https"] {
            // websocket-client leaves out a scheme's default port, as browsers do.
            let defaultPort = scheme == "http" ? 80 : 443
            for name in names {
                if origin == "\(scheme)://\(name):\(port)" || (port == defaultPort && origin == "\(scheme)://\(name)") {
                    return true
                }
            }
        }
        return false
    }
}

/// The request context of the aria2 face: the peer's address, for counting wrong secrets.
struct RPCContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let peer: String

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peer = source.channel.remoteAddress?.ipAddress ?? "unknown"
    }

    /// Request bodies over 1 MiB are refused (413).
    var maxUploadSize: Int { RPCServer.maxBody }
}

/// Refuses a foreign `Host` or a disallowed `Origin` (403) before anything else, and adds the CORS headers
/// an allowed origin needs.
struct RPCGuard: RouterMiddleware {
    typealias Context = RPCContext
    let policy: RPCRequestPolicy

    func handle(_ request: Request, context: RPCContext,
                next: (Request, RPCContext) async throws -> Response) async throws -> Response {
        guard policy.allowsHost(request.head.authority) else {
            return RPCServer.refusal(.forbidden, "Host \(request.head.authority ?? "(none)") is not this service's")
        }
        let origin = request.headers[.origin]
        guard policy.allowsOrigin(origin) else {
            return RPCServer.refusal(.forbidden, "Origin \(origin ?? "") is not allowed (rpc-allowed-origins)")
        }
        var response = try await next(request, context)
        if let origin {
            response.headers[.accessControlAllowOrigin] = origin
            response.headers[.vary] = "Origin"
        }
        return response
    }
}

/// The aria2 JSON-RPC face on TCP: `POST /jsonrpc`, `GET /jsonrpc?method=&id=&params=`, and WebSocket on
/// `/jsonrpc`, with aria2's notifications.
enum RPCServer {
    static let maxBody = 1 << 20

    static func application(face: Aria2Face, policy: RPCRequestPolicy, tls: TLSConfiguration?, service: Service,
                            logger: Logger, onRunning: @escaping @Sendable (Int) async -> Void) throws
        -> Application<RouterResponder<RPCContext>>
    {
        let router = Router(context: RPCContext.self)
        router.add(middleware: RPCGuard(policy: policy))
        router.post("jsonrpc") { request, context in
            var request = request
            let body: ByteBuffer
            do { body = try await request.collectBody(upTo: maxBody) } catch {
                return refusal(.contentTooLarge, "the request is larger than \(maxBody) bytes")
            }
            let (reply, status) = await face.respond(body: body.readableBytesView, peer: context.peer)
            return json(reply, status: status)
        }
        router.get("jsonrpc") { request, context in
            let (reply, status): (JSON, Int)
            switch JSONRPC.request(query: query(of: request.uri.query ?? "")) {
            case .failure(let failure): (reply, status) = (JSONRPC.error(failure, id: .null), failure.httpStatus)
            case .success(let call): (reply, status) = await face.respond(call, peer: context.peer)
            }
            return json(reply, status: status)
        }
        router.on("jsonrpc", method: .options) { request, _ in
            // A CORS preflight, as aria2 answers it (the guard refused disallowed origins already).
            var headers = HTTPFields()
            headers[.accessControlAllowMethods] = "POST, GET, OPTIONS"
            if let asked = request.headers[.accessControlRequestHeaders] {
                headers[.accessControlAllowHeaders] = asked
            }
            headers[.accessControlMaxAge] = "1728000"
            return Response(status: .ok, headers: headers)
        }
        let host = policy.host
        // Text messages must be valid UTF-8: one that is not closes the session with 1007 (RFC 6455).
        let ws = WebSocketServerConfiguration(maxFrameSize: maxBody, validateUTF8: true)
        let plain = HTTPServerBuilder.http1WebSocketUpgrade(configuration: .init(ws: ws)) { head, channel, _ in
                guard head.path?.split(separator: "?").first == "/jsonrpc", policy.allowsHost(head.authority),
                    policy.allowsOrigin(head.headerFields[.origin])
                else {
                    // Answered by the router: 403 for a foreign Host or Origin.
                    return .dontUpgrade
                }
                let peer = channel.remoteAddress?.ipAddress ?? "unknown"
                return .upgrade([:]) { inbound, outbound, _ in
                    try await RPCSession.run(inbound: inbound, outbound: outbound, channel: channel, face: face,
                                             service: service, peer: peer)
                }
            }
        return Application(
            router: router,
            // With a certificate: the same HTTP and WebSocket, inside TLS (HTTPS and WSS).
            server: try tls.map { try HTTPServerBuilder.tls(plain, tlsConfiguration: $0) } ?? plain,
            configuration: .init(address: .hostname(host, port: policy.port), serverName: nil),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? policy.port
                policy.bound(to: port)
                await onRunning(port)
            },
            logger: logger)
    }

    /// `a=1&b=2`, each value percent-decoded (a `+` stays a `+`: base64 holds them).
    static func query(of text: String) -> [String: String] {
        var values: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = parts.first?.removingPercentEncoding else { continue }
            values[key] = parts.count > 1 ? (parts[1].removingPercentEncoding ?? String(parts[1])) : ""
        }
        return values
    }

    static func json(_ value: JSON, status: Int) -> Response {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(4096)
        value.write(to: &bytes)
        var headers = HTTPFields()
        headers[.contentType] = "application/json-rpc"
        return Response(status: HTTPResponse.Status(code: status), headers: headers,
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    static func refusal(_ status: HTTPResponse.Status, _ message: String) -> Response {
        json(JSONRPC.error(JSONRPC.Failure(code: 1, message: message), id: .null), status: status.code)
    }
}
