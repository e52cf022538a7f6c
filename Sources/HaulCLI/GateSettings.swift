import ArgumentParser
import Glibc
import HaulCore

/// The service's gates on its queue: when it runs (`--schedule`), its cap at each time of day
/// (`--limit-schedule`), and what it runs when the queue is done (`--on-queue-done`). Config keys as well:
/// `schedule = ["01:00-07:00"]`, `limit-schedule = ["08:00-18:00 1M", "18:00-08:00 0"]`, `on-queue-done = "CMD"`.
package struct GateSettings: ParsableArguments {
    package init() {}

    @Option(name: .customLong("schedule"), help: ArgumentHelp(
        "A time window in which the queue runs, local time, e.g. 01:00-07:00 (repeatable; across midnight as 22:00-06:00); outside every window downloads wait as scheduled.",
        valueName: "HH:MM-HH:MM"))
    package var schedule: [String] = []

    @Option(name: .customLong("limit-schedule"), help: ArgumentHelp(
        "The overall rate cap in a time window, e.g. \"08:00-18:00 1M\" (repeatable; 0 for none; outside them, the cap set otherwise).",
        valueName: "HH:MM-HH:MM RATE"))
    package var limitSchedule: [String] = []

    @Option(name: .customLong("on-queue-done"), help: ArgumentHelp(
        "Run CMD once each time nothing is left running or waiting, with HAUL_DONE, HAUL_FAILED, HAUL_CANCELLED, HAUL_DOWNLOADS, HAUL_BYTES, HAUL_STATUS in its environment (no shell unless --hook-shell).",
        valueName: "CMD"))
    package var onQueueDone: String?

    @Flag(name: .customLong("hook-shell"), help: "Run --on-queue-done with /bin/sh -c.")
    package var hookShell = false

    package func validate() throws {
        do { _ = try queueSchedule } catch { throw ValidationError(error.message) }
        if let onQueueDone, Hook(command: onQueueDone, shell: hookShell).argv == nil {
            throw ValidationError("--on-queue-done '\(onQueueDone)': an unclosed quote, or no command")
        }
    }

    /// The schedule these options describe.
    package var queueSchedule: QueueSchedule {
        get throws(QueueSchedule.Problem) { try QueueSchedule(schedule: schedule, limitSchedule: limitSchedule) }
    }

    /// The hook, as the service runs it.
    package var queueDoneHook: Hook? {
        onQueueDone.map { Hook(command: $0, shell: hookShell) }
    }

    /// The arguments of `haul service run` for these settings.
    var arguments: [String] {
        var list: [String] = []
        for window in schedule { list += ["--schedule", window] }
        for window in limitSchedule { list += ["--limit-schedule", window] }
        if let onQueueDone { list += ["--on-queue-done", onQueueDone] }
        if hookShell { list.append("--hook-shell") }
        return list
    }

    /// `--start-at`: the next moment, from `now` on, at which the local clock shows `second` of the day, in
    /// seconds since 1970; today's when it is still ahead, else tomorrow's (`mktime` takes summer time in).
    static func nextTime(at second: Int, now: time_t = time(nil)) -> Double {
        var present = now
        var parts = tm()
        guard localtime_r(&present, &parts) != nil else { return Double(now) }
        parts.tm_hour = Int32(second / 3600)
        parts.tm_min = Int32(second / 60 % 60)
        parts.tm_sec = 0
        parts.tm_isdst = -1
        var next = mktime(&parts)
        if next <= now {
            parts.tm_mday += 1
            parts.tm_isdst = -1
            next = mktime(&parts)
        }
        return Double(next)
    }
}
