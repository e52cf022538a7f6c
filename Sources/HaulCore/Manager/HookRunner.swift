import FoundationEssentials
import Glibc
import NIOConcurrencyHelpers

/// Starts hooks without waiting for them in the download's slot, reaps them on a thread of their own each,
/// and lets a run wait for the ones still going before it exits.
final class HookRunner: Sendable {
    private let state = NIOLockedValueBox(State())

    private struct State {
        /// Hooks not ended yet.
        var running = Count()
        /// Hooks waiting at their gate, not started yet.
        var gated = Count()
    }

    /// A number of hooks, and who waits for it to come down to zero.
    private struct Count {
        var value = 0
        var waiters: [CheckedContinuation<Void, Never>] = []

        /// One fewer: the waiters to wake if that was the last.
        mutating func decrement() -> [CheckedContinuation<Void, Never>] {
            value -= 1
            guard value == 0 else { return [] }
            defer { waiters = [] }
            return waiters
        }
    }

    /// How many hooks wait at their gate, not started yet.
    var waitingToStart: Int { state.withLockedValue { $0.gated.value } }

    /// Starts `hook` with `environment` added to haul's own. Its stdout goes to haul's stderr (so it never
    /// mixes into `--json` lines), its stdin is /dev/null. A hook that cannot start is one line on stderr.
    /// With `after`, it starts once that returns (the service's store holding the download's end); it counts
    /// as running from now, so `waitForAll` waits for it.
    func run(_ hook: Hook, name: String, environment: [String: String],
             after gate: (@Sendable () async -> Void)? = nil) {
        guard let argv = hook.argv else {
            TextOutput.standard.err("haul: \(name) '\(hook.command)': an unclosed quote, or no command")
            return
        }
        // Counted before it starts, so that a quick one cannot end (and wake the waiters) before it is counted.
        state.withLockedValue { state in
            state.running.value += 1
            if gate != nil { state.gated.value += 1 }
        }
        guard let gate else {
            Self.start(argv, name: name, environment: environment, state: state)
            return
        }
        Task { [state] in
            await gate()
            Self.start(argv, name: name, environment: environment, state: state)
            Self.decrement(\.gated, in: state)
        }
    }

    /// Returns once every hook run so far has started (none waits at its gate): a service that stops calls it
    /// after its store has taken the last events, so no hook whose "done" is stored is left unstarted.
    func waitForStarts() async {
        await waitUntilZero(\.gated)
    }

    /// Returns once every hook started so far has ended.
    func waitForAll() async {
        await waitUntilZero(\.running)
    }

    private static func start(_ argv: [String], name: String, environment: [String: String],
                              state: NIOLockedValueBox<State>) {
        let result = ChildProcess.start(argv, environment: environment, output: .stderr) { [state] exit in
            if exit != 0 {
                TextOutput.standard.err("haul: \(name) '\(argv[0])' exited with status \(exit)")
            }
            Self.decrement(\.running, in: state)
        }
        if result != 0 {
            TextOutput.standard.err("haul: \(name): cannot run '\(argv[0])': \(String(cString: strerror(result)))")
            Self.decrement(\.running, in: state)
        }
    }

    private static func decrement(_ count: WritableKeyPath<State, Count>, in state: NIOLockedValueBox<State>) {
        for waiter in state.withLockedValue({ $0[keyPath: count].decrement() }) { waiter.resume() }
    }

    private func waitUntilZero(_ count: WritableKeyPath<State, Count>) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLockedValue { state -> Bool in
                if state[keyPath: count].value == 0 { return true }
                state[keyPath: count].waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}
