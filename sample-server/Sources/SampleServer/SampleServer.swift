import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import NIOSSL
import Logging
import ServiceLifecycle

/// A running SuperStorage-API server: `/files/list`, `/files/status` and `/files/download?NAME`.
///
/// Start one in-process for tests or demos, then steer it while it runs:
/// ```swift
/// let server = try await SampleServer.start(SampleServerConfiguration(port: 0))
/// var faults = SampleServerFaults()
/// faults.dropAfterBytes = 100_000
/// server.setFaults(faults)
/// // ... download server.downloadURL("medium.bin") ...
/// await server.stop()
/// ```
/// All members are thread-safe.
public final class SampleServer: Sendable {
    /// The port the server listens on (the real one when the configuration asked for port 0).
    public let port: Int
    private let host: String
    private let scheme: String
    private let controller: ServerController
    private let catalogSnapshot: Catalog
    private let signedLinks: SignedLinks
    private let runTask: Task<Void, any Error>
    private let group: ServiceGroup

    private init(port: Int, host: String, scheme: String, controller: ServerController, catalog: Catalog,
                 signedLinks: SignedLinks, runTask: Task<Void, any Error>, group: ServiceGroup) {
        self.signedLinks = signedLinks
        self.port = port
        self.host = host
        self.scheme = scheme
        self.controller = controller
        self.catalogSnapshot = catalog
        self.runTask = runTask
        self.group = group
    }

    /// Starts listening and returns once the port is bound.
    ///
    /// The first start in a process also prepares the JPEGs (from the disk cache, or by encoding them, about a
    /// second). Throws when the root directory is unusable or the address cannot be bound.
    public static func start(_ configuration: SampleServerConfiguration) async throws -> SampleServer {
        let root = try configuration.root.map { try RootDirectory(path: $0) }
        let jpegs = configuration.jpegs ? try await JPEGFactory.shared.value : []
        let catalog = Catalog(files: configuration.files, jpegs: jpegs, root: root)
        let controller = ServerController(rate: configuration.rate, chunksPerSecond: configuration.chunksPerSecond)
        let log = RequestLog(sink: configuration.requestLog)

        let router = Router(context: SampleRequestContext.self)
        if configuration.login != nil || configuration.cookie != nil {
            router.add(middleware: AccessMiddleware(login: configuration.login, cookie: configuration.cookie, log: log))
        }
        let download = DownloadRoute(catalog: catalog, controller: controller, log: log)
        let listing = CatalogRoutes(catalog: catalog, controller: controller)
        router.get("/files/list", use: listing.list)
        router.get("/files/status", use: listing.status)
        router.get("/files/download", use: download.respond)
        router.head("/files/download", use: download.respond)
        // Links that expire (`SignedLinks`): a fresh one from /sign/NAME, the file through it until it expires.
        let signed = SignedLinks(download: download, log: log, now: configuration.now,
                                 lifetime: configuration.signedLinkLifetime, uses: configuration.signedLinkUses)
        router.get("/sign/**", use: signed.sign)
        router.get("/signed/**", use: signed.serve)
        router.head("/signed/**", use: signed.serve)
        // Not SuperStorage's: the counters, for benchmarks that run the server as a process (bench/crash).
        router.get("/stats") { _, _ in
            let stats = controller.stats
            return "{\"requests\": \(stats.requests), \"headRequests\": \(stats.headRequests), "
                + "\"bodyBytesSent\": \(stats.bodyBytesSent), "
                + "\"rangeRequests\": \(stats.rangeRequests), \"openRangeRequests\": \(stats.openRangeRequests), "
                + "\"bodiesStreaming\": \(stats.bodiesStreaming)}\n"
        }

        let (boundPorts, boundPortSink) = AsyncStream.makeStream(of: Int.self)
        let server: HTTPServerBuilder
        if let tls = configuration.tls {
            let chain = try NIOSSLCertificate.fromPEMFile(tls.certificate).map { NIOSSLCertificateSource.certificate($0) }
            let key = try NIOSSLPrivateKey(file: tls.privateKey, format: .pem)
            server = try .tls(.http1(), tlsConfiguration: .makeServerConfiguration(certificateChain: chain,
                                                                                  privateKey: .privateKey(key)))
        } else {
            server = .http1()
        }
        let app = Application(
            router: router,
            server: server,
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port),
                serverName: "SuperStorage-Sample"),
            onServerRunning: { channel in
                boundPortSink.yield(channel.localAddress?.port ?? -1)
                boundPortSink.finish()
            },
            logger: Logger(label: "SampleServer", factory: { _ in SwiftLogNoOpLogHandler() }))
        let group = ServiceGroup(configuration: .init(
            services: [app], gracefulShutdownSignals: [], cancellationSignals: [],
            logger: Logger(label: "SampleServer", factory: { _ in SwiftLogNoOpLogHandler() })))
        let runTask = Task {
            defer { boundPortSink.finish() }
            try await group.run()
        }
        var ports = boundPorts.makeAsyncIterator()
        guard let port = await ports.next(), port > 0 else {
            runTask.cancel()
            try await runTask.value
            throw SampleServerError("could not listen on \(configuration.host):\(configuration.port)")
        }
        return SampleServer(port: port, host: configuration.host, scheme: configuration.tls == nil ? "http" : "https",
                            controller: controller, catalog: catalog, signedLinks: signed, runTask: runTask, group: group)
    }

    /// `http://HOST:PORT`, with IPv6 hosts in brackets.
    public var baseURL: String {
        host.contains(":") ? "\(scheme)://[\(host)]:\(port)" : "\(scheme)://\(host):\(port)"
    }

    /// The URL that downloads `name`: `baseURL/files/download?NAME`, percent-encoded.
    public func downloadURL(_ name: String) -> String {
        "\(baseURL)/files/download?\(PercentEncoding.encode(name))"
    }

    /// The path and query of a link to `name` through `/signed/` that expires at `expires` (seconds since 1970, on
    /// the server's clock), signed with this server's key; `baseURL` before it makes the whole link.
    public func signedPath(_ name: String, expires: Int64) -> String {
        "/signed/\(PercentEncoding.encode(name))?expires=\(expires)&sig=\(signedLinks.signature(name, expires))"
    }

    /// The faults currently injected into download responses.
    public var faults: SampleServerFaults {
        controller.faults
    }

    /// Replaces the injected faults from the next request on, restarting the drop and 503 counters.
    public func setFaults(_ faults: SampleServerFaults) {
        controller.setFaults(faults)
    }

    /// Lets the bodies held at the next of ``SampleServerFaults/holdAt``'s offsets go on.
    public func release() {
        controller.release()
    }

    /// Returns once a body is held at the `n`th of ``SampleServerFaults/holdAt``'s offsets (counting from 1),
    /// waiting for the `n`th ``release()``.
    public func waitUntilHeld(_ n: Int = 1) async {
        await controller.waitUntilHeld(needing: n)
    }

    /// Counters since start or the last ``resetStats()``.
    public var stats: SampleServerStats {
        controller.stats
    }

    /// Returns once every response body under way has ended (sent, or cut by a client gone): from then on
    /// `stats.bodyBytesSent` holds still until the next request.
    public func waitUntilNoBodies() async {
        await controller.waitUntilNoBodies()
    }

    /// Sets every counter back to zero.
    public func resetStats() {
        controller.resetStats()
    }

    /// The per-response throttle in bytes per second, `nil` when unthrottled.
    public var rate: Int? {
        controller.rate
    }

    /// Changes the throttle for responses that start from now on.
    public func setRate(_ rate: Int?) {
        controller.setRate(rate)
    }

    /// What `/files/list` lists, sorted by name.
    public var catalog: [CatalogEntry] {
        catalogSnapshot.entries()
    }

    /// The line `/files/status` answers, without the newline.
    public var statusLine: String {
        CatalogRoutes(catalog: catalogSnapshot, controller: controller).statusLine()
    }

    /// Stops listening, closes every connection (cutting responses short) and waits until the server is down.
    /// Calling it again does nothing.
    public func stop() async {
        // A graceful shutdown first: the listener closes and connections already accepted are still handed
        // to their handlers. Cancelling at once could catch an accepted connection before its handler ran,
        // and NIO traps on its unfinished writer ("Deinited NIOAsyncWriter without calling finish()", seen
        // once in CI; apple/swift-nio#3481). Responses still running after a moment are cut short.
        await group.triggerGracefulShutdown()
        let runTask = self.runTask
        await withTaskGroup(of: Bool.self) { race in
            race.addTask { _ = try? await runTask.value; return true }
            race.addTask { try? await Task.sleep(for: .milliseconds(50)); return false }
            if await race.next() == false { runTask.cancel() }
            race.cancelAll()
        }
    }

    /// Waits until the server stops, either by ``stop()`` or because it failed; rethrows the failure.
    public func waitUntilStopped() async throws {
        try await withTaskCancellationHandler {
            try await runTask.value
        } onCancel: {
            runTask.cancel()
        }
    }
}
