/// Receives a run's events, from any task.
package protocol Reporter: Sendable {
    func report(_ event: ReportEvent)
}
