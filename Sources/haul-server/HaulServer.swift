import Glibc
import HaulCLI
import HaulCore
import HaulService
import HaulServiceClient
import HaulTorrent
import SampleServer

/// `haul-server`: `haul` with the per-user service (`haul service run`) and the sample server of `--demo`.
/// `haul` starts it for those; it runs every other command line the same way `haul` does.
@main
enum HaulServer {
    static func main() async {
        await Entry.main(server: Server())
    }
}

/// The service and the sample server, for the command line's code.
struct Server: ServerParts {
    func startDemoServer(rate: Int) async throws -> any DemoServer {
        DemoSampleServer(server: try await SampleServer.start(SampleServerConfiguration(port: 0, rate: rate)))
    }

    func rpcProblem(_ settings: ServiceSettings, directory: StateDirectory) -> String? {
        guard let rpc = Self.rpc(settings, directory: directory) else { return nil }
        do { _ = try rpc.tls() } catch { return error.message }
        return nil
    }

    func runService(_ settings: ServiceSettings, directory: StateDirectory, readyDescriptor: Int32?) async -> Int32 {
        var options = ServiceRunner.Options(directory: directory)
        options.concurrency = settings.jobs
        options.rpc = Self.rpc(settings, directory: directory)
        // While the aria2 face listens, a front end may come at any time: no idle exit unless asked.
        options.idleExit = settings.idleExit.map { .milliseconds(Int64($0 * 1000)) }
            ?? (options.rpc == nil ? .seconds(60) : nil)
        options.readyDescriptor = readyDescriptor
        // Checked as the settings were parsed (`GateSettings.validate`).
        options.schedule = (try? settings.gates.queueSchedule) ?? QueueSchedule()
        options.onQueueDone = settings.gates.queueDoneHook
        options.categories = settings.categories
        options.torrents = settings.torrentOptions
        let ready = options
        let signals = SignalStream([SIGINT, SIGTERM, SIGHUP])
        let (stops, sink) = AsyncStream.makeStream(of: Void.self)
        return await withTaskGroup(of: Int32?.self) { group in
            group.addTask {
                for await _ in signals.stream { sink.yield() }
                return nil
            }
            group.addTask { await ServiceRunner.run(ready, stops: stops) }
            var code: Int32 = 0
            for await result in group {
                if let result {
                    code = result
                    signals.stop()
                    sink.finish()
                }
            }
            return code
        }
    }

    /// The aria2 face's configuration, when --rpc-listen asks for it.
    static func rpc(_ settings: ServiceSettings, directory: StateDirectory) -> RPCConfiguration? {
        guard let rpcListen = settings.rpcListen, case .success(let address) = RPCAddress.listenAddress(rpcListen)
        else { return nil }
        var rpc = RPCConfiguration(host: address.host, port: address.port,
                                   secretFile: settings.rpcSecretFile.map(FilePath.absolute) ?? directory.rpcSecret,
                                   outputDirectory: settings.downloadDirectory)
        // The config file's lists and a start's own (passed on to the service) may name the same entries.
        rpc.allowedDirectories = unique(settings.rpcAllowedDirs.map(FilePath.absolute))
        rpc.allowedOrigins = unique(settings.rpcAllowedOrigins)
        rpc.allowRemote = settings.rpcAllowRemote
        rpc.certificateFile = settings.rpcCertificate.map(FilePath.absolute)
        rpc.privateKeyFile = settings.rpcPrivateKey.map(FilePath.absolute)
        return rpc
    }

    private static func unique(_ list: [String]) -> [String] {
        var seen = Set<String>()
        return list.filter { seen.insert($0).inserted }
    }
}

/// `SampleServer` as `--demo` uses it.
struct DemoSampleServer: DemoServer {
    let server: SampleServer
    var baseURL: String { server.baseURL }
    func downloadURL(_ name: String) -> String { server.downloadURL(name) }
    var statusLine: String { server.statusLine }
    func stop() async { await server.stop() }
}
