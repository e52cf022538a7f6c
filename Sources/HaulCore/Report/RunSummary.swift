/// The totals of a run, and its exit code.
package struct RunSummary: Sendable, Equatable {
    var completed = 0
    var failed = 0
    var bytes: Int64 = 0
    package var seconds = 0.0
    package var exitCode: Int32 = 0

    package init() {}
}
