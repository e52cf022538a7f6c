import Foundation

/// How the suite is being run. `make test-tsan` sets `HAUL_SANITIZED=thread`: under the thread sanitizer
/// code runs several times slower and needs several times the memory, so time bounds stretch and memory
/// bounds are not checked (they are checked by the plain `make test` run).
public enum TestEnvironment {
    public static let sanitized = ProcessInfo.processInfo.environment["HAUL_SANITIZED"] != nil

    /// A time bound for this build: `duration` normally, ten times it under a sanitizer.
    public static func bound(_ duration: Duration) -> Duration {
        sanitized ? duration * 10 : duration
    }
}
