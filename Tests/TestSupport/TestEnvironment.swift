import Foundation

/// How the suite is being run. `make test-tsan` sets `HAUL_SANITIZED=thread`: under the thread sanitizer
/// code runs several times slower and needs several times the memory, so time bounds stretch and memory
/// bounds are not checked (they are checked by the plain `make test` run).
public enum TestEnvironment {
    public static let sanitized = ProcessInfo.processInfo.environment["HAUL_SANITIZED"] != nil

    /// A deadline for this build: three times `duration` normally, twenty times it under a sanitizer.
    ///
    /// Every bound here is a deadline that turns a hang into a failure, never a measure of speed (speed lives
    /// in bench/), so it is stretched well past what a loaded machine needs: the whole suite runs its 500
    /// tests at once on two cores, and there an event a test waits for can take most of ten seconds to come
    /// (the full-screen loop's tests passed after 18-19 s in every clean run; one CI run missed a 10 s wait for
    /// a download's first progress). A real hang still fails, a little later.
    public static func bound(_ duration: Duration) -> Duration {
        sanitized ? duration * 20 : duration * 3
    }
}
