import Foundation

/// A state directory of its own for one test (`HAUL_HOME`), so that the services the test's clients start
/// never share the user's queue or another test's. When the test lets go of it, the service still running
/// there is stopped (`haul service stop`) before the directory is removed.
public final class ServiceHome: Sendable {
    private let directory = TempDirectory()

    public init() {}

    /// The state directory: `haul.sqlite`, `haul.sock`, `service.log` go here.
    public var path: String { directory.path + "/state" }

    /// What a haul process needs to use it.
    public var environment: [String: String] { ["HAUL_HOME": path] }

    public var socket: String { path + "/haul.sock" }

    deinit {
        let stop = Process()
        stop.executableURL = URL(fileURLWithPath: HaulProcess.binary)
        stop.arguments = ["service", "stop", "--no-config"]
        stop.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        stop.standardOutput = FileHandle.nullDevice
        stop.standardError = FileHandle.nullDevice
        if (try? stop.run()) != nil { stop.waitUntilExit() }
    }
}
