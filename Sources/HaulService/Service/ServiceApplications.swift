import HaulCore
import HaulServiceClient
import Hummingbird
import Logging
import ServiceLifecycle

/// The service's faces as Hummingbird applications, built apart from the lifecycle that runs them
/// (`ServiceRunner.serve`), as the Hummingbird template's `buildApplication`: tests build the same ones and
/// drive them in process (HummingbirdTesting's router client).
struct ServiceApplications: Sendable {
    /// The control API (docs/protocol.md), on the state directory's Unix socket.
    let control: Application<RouterResponder<ControlContext>>
    /// The aria2 JSON-RPC face, when the service's configuration asks for it.
    let rpc: Application<RouterResponder<RPCContext>>?

    /// What each application tells once it listens.
    struct Listening: Sendable {
        /// The control socket accepts connections.
        var control: @Sendable () async -> Void = {}
        /// The aria2 face accepts connections on this port.
        var rpc: @Sendable (Int) async -> Void = { _ in }
    }

    /// What a `ServiceGroup` runs.
    var services: [any ServiceLifecycle.Service] {
        [control] + (rpc.map { [$0] } ?? [])
    }

    /// Builds the faces of `service`: the control API on its state directory's socket, each request's peer
    /// checked by `peer` (the kernel's word, `SO_PEERCRED`, in the service); and the aria2 face when its
    /// configuration has one, whose TLS is set up and whose secret is read (or made) now. Nothing listens
    /// until the applications run.
    static func build(service: Service, peer: PeerIdentity = .socketCredentials, listening: Listening = Listening(),
                      logger: Logger) throws(HaulError) -> ServiceApplications
    {
        let directory = service.configuration.directory
        let socket = directory.socket
        let control = Application(
            router: ControlAPI.router(service: service, socket: socket, peer: peer),
            configuration: .init(address: .unixDomainSocket(path: socket), serverName: nil),
            onServerRunning: { _ in await listening.control() },
            logger: logger)
        guard let rpc = service.configuration.rpc else { return ServiceApplications(control: control, rpc: nil) }
        let tls = try rpc.tls()
        let secret = try RPCSecret.load(rpc.secretFile, create: rpc.secretFile == directory.rpcSecret)
        let face = Aria2Face(service: service, secret: secret, paths: rpc.paths, gate: SecretGate(clock: service.clock.moments))
        let policy = RPCRequestPolicy(host: rpc.host, port: rpc.port, allowRemote: rpc.allowRemote,
                                      origins: rpc.allowedOrigins)
        do {
            let application = try RPCServer.application(face: face, policy: policy, tls: tls, service: service,
                                                         logger: logger, onRunning: listening.rpc)
            return ServiceApplications(control: control, rpc: application)
        } catch {
            throw HaulError(.usage, "cannot set up TLS for the aria2 JSON-RPC: \(error)")
        }
    }
}
