import CLinux
import FoundationEssentials
import Glibc
import HaulCore
import HaulServiceClient
import NIOConcurrencyHelpers

/// What only `haul-server` carries: the per-user service (`haul service run`) and the sample server of
/// `--demo`. `haul` is built without them: their code (Hummingbird, NIO, GRDB and SQLite, a second
/// BoringSSL) cost every download's start the loader's relocation of their pages and the runtime's scans of
/// their conformance records. `haul` hands `service start|run` and `--demo` to `haul-server` (an `exec`:
/// the same process, its arguments, its exit code), which is `haul` with these parts.
package protocol ServerParts: Sendable {
    /// Starts the sample server of `--demo`, throttled per connection to `rate` bytes a second.
    func startDemoServer(rate: Int) async throws -> any DemoServer
    /// Why the aria2 face of `settings` (`--rpc-listen` given, its address checked) could not be set up:
    /// its certificate and key; nil when it can.
    func rpcProblem(_ settings: ServiceSettings, directory: StateDirectory) -> String?
    /// Runs the service in the foreground until a signal or its idle exit; its exit code.
    func runService(_ settings: ServiceSettings, directory: StateDirectory, readyDescriptor: Int32?) async -> Int32
}

/// The sample server, as `--demo` uses it.
package protocol DemoServer: Sendable {
    var baseURL: String { get }
    func downloadURL(_ name: String) -> String
    var statusLine: String { get }
    func stop() async
}

/// The server parts of this executable: set once by `haul-server`'s `main`, nil in `haul`.
enum ServerSide {
    private static let installed = NIOLockedValueBox<(any ServerParts)?>(nil)

    static var parts: (any ServerParts)? { installed.withLockedValue { $0 } }

    static func install(_ parts: (any ServerParts)?) {
        installed.withLockedValue { $0 = parts }
    }

    /// Replaces this process with `haul-server` and the same command line (the config file is chosen
    /// again there); exits 1 with the reason when it cannot.
    static func execServer() -> Never {
        let executable: String
        do {
            executable = try ServerExecutable.path()
        } catch {
            TextOutput.standard.err("haul: " + error.message)
            exit(FailureCategory.other.exitCode)
        }
        let argv = [executable] + CommandLine.arguments.dropFirst()
        var cArguments = argv.map { strdup($0) } + [nil]
        execv(executable, &cArguments)
        let reason = String(cString: strerror(errno))
        for pointer in cArguments { free(pointer) }
        TextOutput.standard.err("haul: cannot run \(executable): \(reason)")
        exit(FailureCategory.other.exitCode)
    }
}
