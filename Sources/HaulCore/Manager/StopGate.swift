import NIOConcurrencyHelpers

/// One run of a download: its task reports `.downloading` from its own thread, and a user's stop its state
/// from the actor; whichever comes second must be the last word, so both report under this lock.
///
/// A pthread-based lock, not `Synchronization.Mutex`: on Linux the latter is a bare futex the thread sanitizer
/// cannot see, so it reported the flag and everything `report` touches as racing (a CI run failed on it).
final class StopGate: Sendable {
    private let stopped = NIOLockedValueBox(false)

    /// Runs `report` unless the run was stopped.
    func unlessStopped(_ report: () -> Void) {
        stopped.withLockedValue { stopped in
            if !stopped { report() }
        }
    }

    /// Marks the run stopped, and runs `report`: nothing the task says after it changes the state.
    func stop(_ report: () -> Void) {
        stopped.withLockedValue { stopped in
            stopped = true
            report()
        }
    }
}
