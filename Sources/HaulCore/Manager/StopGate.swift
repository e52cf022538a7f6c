import Synchronization

/// One run of a download: its task reports `.downloading` from its own thread, and a user's stop its state
/// from the actor; whichever comes second must be the last word, so both report under this lock.
final class StopGate: Sendable {
    private let stopped = Mutex(false)

    /// Runs `report` unless the run was stopped.
    func unlessStopped(_ report: () -> Void) {
        stopped.withLock { stopped in
            if !stopped { report() }
        }
    }

    /// Marks the run stopped, and runs `report`: nothing the task says after it changes the state.
    func stop(_ report: () -> Void) {
        stopped.withLock { stopped in
            stopped = true
            report()
        }
    }
}
