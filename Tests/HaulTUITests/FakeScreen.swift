import NIOConcurrencyHelpers
@testable import HaulTUI

/// A `Screen` without a terminal: keeps the frames the loop shows and lets a test type keys.
final class FakeScreen: Screen {
    private struct State {
        var events: (@Sendable (TerminalEvent) -> Void)?
        var latest: Grid?
        var frames = 0
        var notices: [String] = []
        var stopped = false
        var waiters: [(id: Int, condition: @Sendable ([String]) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []
        var nextWaiter = 0
    }

    let info: ScreenInfo
    private let state = NIOLockedValueBox(State())

    init(size: Size = Size(columns: 120, rows: 30)) {
        info = ScreenInfo(size: size, colors: true, unicode: true)
    }

    func start(events: @escaping @Sendable (TerminalEvent) -> Void) async throws -> ScreenInfo {
        state.withLockedValue { $0.events = events }
        return info
    }

    func show(_ grid: Grid) {
        let lines = grid.lines
        let ready = state.withLockedValue { state in
            state.latest = grid
            state.frames += 1
            let ready = state.waiters.filter { $0.condition(lines) }
            state.waiters.removeAll { $0.condition(lines) }
            return ready.map(\.continuation)
        }
        for continuation in ready { continuation.resume() }
    }

    func notify(_ text: String) {
        state.withLockedValue { $0.notices.append(text) }
    }

    var notices: [String] { state.withLockedValue(\.notices) }

    func stop() async {
        state.withLockedValue { $0.stopped = true }
    }

    func send(_ event: TerminalEvent) {
        state.withLockedValue(\.events)?(event)
    }

    func type(_ keys: Key...) {
        for key in keys { send(.key(key)) }
    }

    var stopped: Bool { state.withLockedValue(\.stopped) }
    var frameCount: Int { state.withLockedValue(\.frames) }
    var lines: [String] { state.withLockedValue { $0.latest?.lines ?? [] } }

    /// Returns once a frame shown satisfies `condition` (the latest one included); cancellable, so a
    /// timeout around it ends the wait.
    func waitUntil(_ condition: @escaping @Sendable ([String]) -> Bool) async {
        let id = state.withLockedValue { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLockedValue { state -> Bool in
                    if Task.isCancelled { return true }
                    if let latest = state.latest, condition(latest.lines) { return true }
                    state.waiters.append((id, condition, continuation))
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLockedValue { state in
                let index = state.waiters.firstIndex { $0.id == id }
                return index.map { state.waiters.remove(at: $0).continuation }
            }
            waiter?.resume()
        }
    }
}
