/// The totals of a run, and its exit code.
package struct RunSummary: Sendable, Equatable {
    var completed = 0
    var failed = 0
    var bytes: Int64 = 0
    package var seconds = 0.0
    package var exitCode: Int32 = 0

    package init() {}

    /// A run's totals from an engine that keeps its own (a torrent's).
    package init(completed: Int, failed: Int, bytes: Int64, seconds: Double, exitCode: Int32) {
        self.completed = completed
        self.failed = failed
        self.bytes = bytes
        self.seconds = seconds
        self.exitCode = exitCode
    }
}
