import ArgumentParser
import CLinux
import FoundationEssentials
import Glibc
import HaulCore
import HaulServiceClient
import HaulTorrent

struct ServiceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "service", abstract: "The per-user service that keeps the queue.",
        subcommands: [ServiceStart.self, ServiceStop.self, ServiceStatus.self, ServiceRun.self])
}

/// What the service is started with, by `service start`, `service run` and the clients that start it.
package struct ServiceSettings: ParsableArguments {
    package init() {}

    @Option(name: [.customShort("j"), .customLong("jobs")], help: "Downloads at once, \(Limits.jobs).")
    package var jobs = 4

    @Option(name: .customLong("idle-exit"), help: ArgumentHelp(
        "Seconds with nothing queued or running and no client attached before the service ends (default 60; never while --rpc-listen is on).",
        valueName: "seconds"))
    package var idleExit: Double?

    @Option(name: .customLong("rpc-listen"), help: ArgumentHelp(
        "Answer aria2's JSON-RPC (AriaNg, aria2p, browser extensions) on this address, e.g. 127.0.0.1:6800.",
        valueName: "addr:port"))
    package var rpcListen: String?

    @Option(name: .customLong("rpc-secret-file"), help: ArgumentHelp(
        "The file holding the RPC secret (default: one made in the state directory, mode 0600).", valueName: "file"))
    package var rpcSecretFile: String?

    @Option(name: .customLong("rpc-allowed-dir"), help: ArgumentHelp(
        "A directory the RPC's `dir` option may name (repeatable; default: the output directory).", valueName: "dir"))
    package var rpcAllowedDirs: [String] = []

    @Option(name: .customLong("rpc-allowed-origin"), help: ArgumentHelp(
        "A web origin allowed to call the RPC besides browser extensions, e.g. https://ariang.example (repeatable).",
        valueName: "origin"))
    package var rpcAllowedOrigins: [String] = []

    @Flag(name: .customLong("rpc-allow-remote"), help: "Allow --rpc-listen on an address other hosts reach.")
    package var rpcAllowRemote = false

    @Option(name: .customLong("rpc-certificate"), help: ArgumentHelp(
        "A PEM certificate (chain): the RPC speaks HTTPS and WSS (with --rpc-private-key).", valueName: "file"))
    package var rpcCertificate: String?

    @Option(name: .customLong("rpc-private-key"), help: ArgumentHelp(
        "The PEM private key of --rpc-certificate, readable by you alone.", valueName: "file"))
    package var rpcPrivateKey: String?

    @Option(name: [.customShort("o"), .customLong("output-dir")], help: ArgumentHelp(
        "Where downloads added over the RPC go (default: ~/Downloads).", valueName: "dir"))
    var outputDir: String?

    /// `--schedule`, `--limit-schedule`, `--on-queue-done` (GateSettings).
    @OptionGroup package var gates: GateSettings

    /// The torrents' session: `--bt-listen-port`, `--no-dht`... (TorrentSessionSettings).
    @OptionGroup package var torrentSession: TorrentSessionSettings

    @Option(name: .customLong("interface"), help: ArgumentHelp(
        "The address the service's torrents listen and connect on (default: every one).", valueName: "address"))
    package var interface: String?

    /// The service's torrent session, as these settings describe it.
    package var torrentOptions: TorrentSessionOptions {
        torrentSession.options(interface: interface, downloadRate: nil)
    }

    /// The config file's `[categories.NAME]` tables (`CategorySettings`), for what `haul add` and aria2 add.
    @Option(name: .customLong("category-rule"), help: .private)
    var categoryRules: [String] = []

    /// The rules `categoryRules` carry, in the config file's order.
    package var categories: CategoryRules {
        var settings = CategorySettings()
        settings.encodedRules = categoryRules
        return settings.rules
    }

    /// Refused with a reason: any local user can read a process's arguments.
    @Option(name: .customLong("rpc-secret"), help: .hidden)
    var rpcSecret: String?

    package func validate() throws {
        try Limits.check("--jobs", jobs, Limits.jobs)
        if let idleExit, !(idleExit >= 0.1 && idleExit <= TransferOptions.maxSeconds) {
            throw ValidationError("--idle-exit must be from 0.1 to 2592000 seconds, not \(idleExit)")
        }
        if rpcSecret != nil {
            throw ValidationError("--rpc-secret: a secret is never taken on the command line (any local user can read "
                                  + "a process's arguments); put it in a file of mode 0600 and pass --rpc-secret-file FILE")
        }
        if let rpcListen {
            switch RPCAddress.listenAddress(rpcListen) {
            case .failure(let problem): throw ValidationError(problem.message)
            case .success(let address):
                if !RPCAddress.isLoopback(address.host) && !rpcAllowRemote {
                    throw ValidationError("--rpc-listen \(rpcListen) is reachable from other hosts"
                                          + (rpcCertificate == nil ? " and the transport is plaintext" : "")
                                          + "; add --rpc-allow-remote to mean it")
                }
            }
            if (rpcCertificate == nil) != (rpcPrivateKey == nil) {
                throw ValidationError("--rpc-certificate and --rpc-private-key go together")
            }
            // The certificate and the key, read as the aria2 face will read them: where the service is
            // (`haul-server`, which `haul service start|run` run in); the service checks them again as it starts.
            if let problem = ServerSide.parts?.rpcProblem(self, directory: SessionCommands.directory) {
                throw ValidationError(problem)
            }
        } else if rpcSecretFile != nil || !rpcAllowedDirs.isEmpty || !rpcAllowedOrigins.isEmpty || rpcAllowRemote
                    || rpcCertificate != nil || rpcPrivateKey != nil {
            throw ValidationError("the --rpc-* options need --rpc-listen ADDR:PORT")
        }
    }

    /// The output directory of RPC downloads, absolute.
    package var downloadDirectory: String {
        if let outputDir { return FilePath.absolute(outputDir) }
        return FilePath.join(ProcessInfo.processInfo.environment["HOME"] ?? FileManager.default.currentDirectoryPath,
                             "Downloads")
    }

    /// The arguments of `haul service run` for these settings, with every path made absolute.
    var arguments: [String] {
        var list = ["--jobs", String(jobs)] + gates.arguments + torrentSession.arguments
        if let interface { list += ["--interface", interface] }
        if let idleExit { list += ["--idle-exit", String(idleExit)] }
        if let rpcListen {
            list += ["--rpc-listen", rpcListen, "--output-dir", downloadDirectory]
            if let rpcSecretFile { list += ["--rpc-secret-file", FilePath.absolute(rpcSecretFile)] }
            for dir in rpcAllowedDirs { list += ["--rpc-allowed-dir", FilePath.absolute(dir)] }
            for origin in rpcAllowedOrigins { list += ["--rpc-allowed-origin", origin] }
            if rpcAllowRemote { list.append("--rpc-allow-remote") }
            if let rpcCertificate, let rpcPrivateKey {
                list += ["--rpc-certificate", FilePath.absolute(rpcCertificate),
                         "--rpc-private-key", FilePath.absolute(rpcPrivateKey)]
            }
        }
        return list
    }

    /// `-j` for a service that runs already. One that does not take it (an older one, still running after an
    /// upgrade, has no `POST /v1/jobs`) keeps its own: said in one line, and the command goes on.
    static func give(jobs: Int, to client: ServiceClient) async {
        // A service this client started has them already (`starting`).
        guard !client.startedTheService else { return }
        do { try await client.setJobs(jobs) } catch {
            TextOutput.standard.err("haul: the running service keeps its own downloads at once, not -j \(jobs): \(error.message)")
        }
    }

    /// What a client starts the service with when it is not running: the same config file, and its `--jobs`.
    static func starting(jobs: Int) -> [String] {
        ConfigFile.Selection.current.arguments + ["--jobs", String(jobs)]
    }

}

struct ServiceStart: SessionVerb {
    static let configuration = CommandConfiguration(commandName: "start", abstract: "Start the service if it is not running.")
    @OptionGroup var settings: ServiceSettings
    @Flag(help: "Print the status as JSON.") var json = false

    func execute() async throws(HaulError) -> Int32 {
        let client = try await ServiceClient.connect(SessionCommands.directory,
                                                  starting: ConfigFile.Selection.current.arguments + settings.arguments)
        let status = try await client.status()
        ServiceStatus.show(status, json: json)
        if settings.rpcListen != nil, status.rpc == nil {
            TextOutput.standard.err("haul service: it was already running without --rpc-listen; "
                                    + "`haul service stop`, then start it again with it")
            return FailureCategory.other.exitCode
        }
        return 0
    }
}

struct ServiceStop: SessionVerb {
    static let configuration = CommandConfiguration(
        commandName: "stop", abstract: "Pause every running download (resumable), then stop the service.")

    func execute() async throws(HaulError) -> Int32 {
        let directory = SessionCommands.directory
        guard let client = try? await ServiceClient.connect(directory, starting: nil) else {
            TextOutput.standard.out("haul service: not running")
            return 0
        }
        try await client.stop()
        TextOutput.standard.out("haul service: stopped")
        return 0
    }
}

struct ServiceStatus: SessionVerb {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Whether the service runs, and its queue.")
    @Flag(help: "One JSON object: running, pid, socket, downloads, active, jobs.") var json = false

    func execute() async throws(HaulError) -> Int32 {
        let directory = SessionCommands.directory
        if let client = try? await ServiceClient.connect(directory, starting: nil) {
            Self.show(try await client.status(), json: json)
        } else {
            Self.show(Wire.Status(running: false, pid: nil, socket: directory.socket, downloads: 0, active: 0), json: json)
        }
        return 0
    }

    static func show(_ status: Wire.Status, json: Bool) {
        if json {
            TextOutput.standard.out(String(decoding: Wire.encode(status), as: UTF8.self))
        } else if status.running {
            TextOutput.standard.out("haul service: running, pid \(status.pid.map(String.init) ?? "?"), \(status.socket); "
                                    + "\(status.downloads) download(s), \(status.active) queued or running"
                                    + (status.jobs.map { ", \($0) at once" } ?? ""))
            if let rpc = status.rpc {
                TextOutput.standard.out("aria2 JSON-RPC: \(rpc.url) (secret in \(rpc.secretFile))")
            }
            if let problem = status.store { TextOutput.standard.out("haul service: \(problem)") }
        } else {
            TextOutput.standard.out("haul service: not running (\(status.socket))")
        }
    }
}

struct ServiceRun: SessionVerb {
    static let configuration = CommandConfiguration(
        commandName: "run", abstract: "Run the service in the foreground (clients start it detached by themselves).")
    @OptionGroup var settings: ServiceSettings
    @Option(name: .customLong("ready-fd"), help: .hidden) var readyDescriptor: Int32?

    func execute() async throws(HaulError) -> Int32 {
        guard let server = ServerSide.parts else { ServerSide.execServer() }
        return await server.runService(settings, directory: SessionCommands.directory, readyDescriptor: readyDescriptor)
    }
}
