import Foundation
import Glibc
import HaulCore
import HaulServiceClient

/// What the service keeps of its queue's gates: the schedule's timer and what it last said, the totals of
/// the queue's present run (for `--on-queue-done`), and the downloads that run (for the sleep inhibitor).
struct ServiceGates {
    /// Sleeps until the schedule's next change, or the next `--start-at`, then reviews it.
    var timer: Task<Void, Never>?
    /// What the schedule said at the last review, and when it changes next.
    var verdict: QueueSchedule.Verdict?
    var nextChange: Date?
    /// The overall cap the schedule set last: `.none` while none of its rate windows held.
    var scheduledLimit: Int64?? = .none
    /// The cap in force when the schedule's is (`.none` once the user set one of their own, until the next
    /// change of the schedule).
    var scheduleCap: Int64?? = .none
    /// Downloads that ended since the queue last ran dry, and the bytes of those done.
    var done = 0
    var failed = 0
    var cancelled = 0
    var bytes: Int64 = 0
    /// Downloads connecting or downloading: while any does, the machine is kept awake.
    var running: Set<DownloadID> = []

    /// The longest the timer sleeps: a wall clock set anew (NTP, a new time zone, summer time) is caught up
    /// with within this, whatever the schedule says.
    static let longestSleep: Double = 15 * 60
}

extension Service {
    /// The local time of day of `date`, in seconds since midnight, as the system's time zone has it.
    static func localSecond(_ date: Date) -> Int {
        var time = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        guard localtime_r(&time, &parts) != nil else { return Int(time % 86_400) }
        return Int(parts.tm_hour) * 3600 + Int(parts.tm_min) * 60 + Int(parts.tm_sec)
    }

    /// Reads the service's clock and tells the queue where the schedule stands: whether its windows let
    /// downloads run (a closing one stops what runs, keeping its bytes), which `--start-at` times have come,
    /// and the overall cap of this part of the day; then sleeps until the next of these changes.
    func reviewSchedule() async {
        let date = clock.date()
        let verdict = configuration.schedule.verdict(at: configuration.localSecond(date))
        let now = date.timeIntervalSince1970
        await manager.setTimeGate(TimeGate(open: verdict.open, now: now))
        if verdict.limit != gates.scheduledLimit {
            gates.scheduledLimit = verdict.limit
            gates.scheduleCap = verdict.limit
            // Leaving every rate window gives back the cap the user set (`+`/`-`, aria2's global option).
            await manager.setOverallReceiveLimit(verdict.limit ?? aria2Globals.overallLimit)
        }
        var wait = verdict.secondsToChange.map(Double.init)
        if let next = await manager.nextStartAfter { wait = min(wait ?? .infinity, next - now) }
        gates.verdict = configuration.schedule.isEmpty ? nil : verdict
        gates.nextChange = wait.map { date.addingTimeInterval($0) }
        armScheduleTimer(wait)
    }

    private func armScheduleTimer(_ wait: Double?) {
        gates.timer?.cancel()
        gates.timer = nil
        guard let wait, endReason == nil else { return }
        let clock = clock
        // At least a millisecond: a start time that has just come is reviewed once, not in a loop.
        let sleep = Duration.milliseconds(Int64((min(max(wait, 0.001), ServiceGates.longestSleep) * 1000).rounded(.up)))
        gates.timer = Task { [weak self] in
            guard (try? await clock.sleep(for: sleep)) != nil else { return }
            await self?.reviewSchedule()
        }
    }

    /// The overall cap in force: the schedule's, unless the user set one since its last change.
    var limitInForce: Int64? {
        (gates.scheduleCap ?? aria2Globals.overallLimit).flatMap { $0 > 0 ? $0 : nil }
    }

    /// Where the schedule stands, for `status` (the screen's header): nil without a schedule.
    var scheduleStatus: ScheduleStatus? {
        guard let verdict = gates.verdict else { return nil }
        let next = gates.nextChange
        return ScheduleStatus(open: verdict.open, window: verdict.window?.text, limit: verdict.limit.map { $0 ?? 0 },
                              next: next?.timeIntervalSince1970,
                              nextClock: next.map { TimeWindow.clock(configuration.localSecond($0)) },
                              secondsToNext: next.map { Int(max(0, $0.timeIntervalSince(clock.date())).rounded(.up)) })
    }

    /// Follows the events for the gates: what runs (the sleep inhibitor), what ended (the queue's totals), and
    /// whether the queue has run dry: nothing running or waiting, so `--on-queue-done` runs, once.
    func noteForGates(_ events: [ManagerEvent]) {
        var ended = false
        for event in events {
            switch event {
            case .state(let id, let state):
                if state.isActive { gates.running.insert(id) } else { gates.running.remove(id) }
                switch state {
                case .done: gates.done += 1
                case .failed: gates.failed += 1
                case .cancelled: gates.cancelled += 1
                default: continue
                }
                ended = true
            case .finished(_, let result, _):
                gates.bytes += result.bytes
            default:
                break
            }
        }
        if gates.running.isEmpty { configuration.inhibitor.release() } else { configuration.inhibitor.hold() }
        guard ended, roster.active == 0, endReason == nil else { return }
        let total = gates.done + gates.failed + gates.cancelled
        guard total > 0 else { return }
        let environment = [
            "HAUL_DOWNLOADS": String(total),
            "HAUL_DONE": String(gates.done),
            "HAUL_FAILED": String(gates.failed),
            "HAUL_CANCELLED": String(gates.cancelled),
            "HAUL_BYTES": String(gates.bytes),
            "HAUL_STATUS": gates.failed == 0 ? "done" : "failed",
        ]
        gates.done = 0
        gates.failed = 0
        gates.cancelled = 0
        gates.bytes = 0
        guard let hook = configuration.onQueueDone else { return }
        // It starts once the store holds every event so far (the ends it counts), as a download's hook does.
        let handled = handled
        let mark = manager.eventsYielded
        manager.runQueueDoneHook(hook, environment: environment) { await handled.wait(until: mark) }
    }
}
