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
        // On a thread of its own, not the releasing one: that is usually one of the two threads of Swift's
        // cooperative pool, and under the sanitizer `haul service stop` takes over a second even with no
        // service to stop, which stalled every other test of the suite meanwhile (about 45 homes in a run).
        // The thread holds the directory until the service is down; the process waits for every such stop
        // before it exits (`ServiceStops`), so no service outlives the test run.
        let directory = self.directory
        let environment = ProcessInfo.processInfo.environment.merging(self.environment) { $1 }
        ServiceStops.shared.run {
            let stop = Process()
            stop.executableURL = URL(fileURLWithPath: HaulProcess.binary)
            stop.arguments = ["service", "stop", "--no-config"]
            stop.environment = environment
            stop.standardOutput = FileHandle.nullDevice
            stop.standardError = FileHandle.nullDevice
            if (try? stop.run()) != nil { stop.waitUntilExit() }
            // Removed here, not at the release of this closure: that comes after the thread has left the
            // group, so the last home of a run outlived the process and stayed in /tmp.
            directory.remove()
        }
    }
}

/// The `haul service stop`s under way, each on a thread of its own; the test process waits for them at exit.
final class ServiceStops: Sendable {
    static let shared = ServiceStops()

    private let group = DispatchGroup()

    private init() {
        atexit { ServiceStops.shared.waitForAll() }
    }

    func run(_ body: @escaping @Sendable () -> Void) {
        group.enter()
        Thread.detachNewThread { [group] in
            body()
            group.leave()
        }
    }

    /// Waits for the stops, then removes the test directories their services were still writing in.
    func waitForAll() {
        group.wait()
        TempDirectory.removeLeftBehind()
    }
}
