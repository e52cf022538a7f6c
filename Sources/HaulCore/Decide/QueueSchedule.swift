/// A span of the day, "HH:MM-HH:MM" in local time: from its start (included) to its end (excluded). An end
/// before the start crosses midnight ("22:00-06:00"); an end equal to the start is the whole day.
package struct TimeWindow: Sendable, Equatable {
    /// Seconds since local midnight, 0..<86400.
    package let start: Int
    package let end: Int

    package static let day = 86_400

    package init(start: Int, end: Int) {
        self.start = start
        self.end = end
    }

    /// "01:00-07:00"; nil when it is not two times of day (00:00 to 23:59, or 24:00 as an end) joined by "-".
    package init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = Self.timeOfDay(parts[0]), let end = Self.timeOfDay(parts[1], asEnd: true),
              start < Self.day else { return nil }
        self.start = start
        self.end = end % Self.day
    }

    /// "HH:MM" (or "H:MM") as seconds since midnight; "24:00" only as an end.
    package static func timeOfDay(_ text: some StringProtocol, asEnd: Bool = false) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...2).contains(parts[0].count), parts[1].count == 2,
              parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
              let hour = Int(parts[0]), let minute = Int(parts[1]), minute < 60 else { return nil }
        guard hour < 24 || (asEnd && hour == 24 && minute == 0) else { return nil }
        return (hour * 60 + minute) * 60
    }

    /// Whether `second` of the day (0..<86400) lies in it.
    package func contains(_ second: Int) -> Bool {
        if start == end { return true }
        if start < end { return second >= start && second < end }
        return second >= start || second < end
    }

    /// "01:00-07:00".
    package var text: String { "\(Self.clock(start))-\(Self.clock(end))" }

    /// "07:05" for a second of the day.
    package static func clock(_ second: Int) -> String {
        let minutes = (second / 60) % (24 * 60)
        let (hour, minute) = (minutes / 60, minutes % 60)
        return (hour < 10 ? "0" : "") + "\(hour):" + (minute < 10 ? "0" : "") + "\(minute)"
    }
}

/// The queue's time rules (`schedule`, `limit-schedule`): the windows in which downloads may run, and the
/// overall receive cap each part of the day has. Pure: it is asked about a second of the local day, and the
/// service, which reads its clock, asks it again when `secondsToNextChange` says.
package struct QueueSchedule: Sendable, Equatable {
    /// Downloads run only inside one of these; none: at any time.
    package var windows: [TimeWindow] = []
    /// The overall cap in each window, the first that holds the time winning (nil: no cap); outside all of
    /// them, the cap the user set otherwise.
    package var limits: [RateWindow] = []

    package struct RateWindow: Sendable, Equatable {
        package var window: TimeWindow
        package var bytesPerSecond: Int64?
    }

    /// What the schedule says at one second of the day.
    package struct Verdict: Sendable, Equatable {
        /// Whether downloads may run.
        package var open: Bool
        /// The window that holds the time when open, or the next to open when closed; nil without windows.
        package var window: TimeWindow?
        /// The cap in force: `.none` when no rate window holds the time (the user's own cap applies),
        /// `.some(nil)` for a window whose cap is 0 (none).
        package var limit: Int64??
        /// Seconds from then until any of this changes; nil when nothing ever does.
        package var secondsToChange: Int?
    }

    package init(windows: [TimeWindow] = [], limits: [RateWindow] = []) {
        self.windows = windows
        self.limits = limits
    }

    package struct Problem: Error, Equatable {
        package let message: String
    }

    /// The config's lists: `schedule = ["01:00-07:00", ...]`, `limit-schedule = ["08:00-18:00 1M", ...]`.
    package init(schedule: [String], limitSchedule: [String]) throws(Problem) {
        for text in schedule {
            guard let window = TimeWindow(text.trimmingWhitespace()) else {
                throw Problem(message: "--schedule \(text): not a window such as 01:00-07:00")
            }
            windows.append(window)
        }
        for text in limitSchedule {
            let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count == 2, let window = TimeWindow(words[0]) else {
                throw Problem(message: "--limit-schedule \(text): not a window and a rate such as \"08:00-18:00 1M\"")
            }
            let rate: Int64?
            do { rate = try JobOptions.rate("--limit-schedule", String(words[1])) } catch {
                throw Problem(message: "--limit-schedule \(text): \(words[1]) is not a rate such as 500K or 2M (0 for none)")
            }
            limits.append(RateWindow(window: window, bytesPerSecond: rate))
        }
    }

    /// Whether there is anything to follow.
    package var isEmpty: Bool { windows.isEmpty && limits.isEmpty }

    /// What holds at `second` of the local day (0..<86400).
    package func verdict(at second: Int) -> Verdict {
        let second = ((second % TimeWindow.day) + TimeWindow.day) % TimeWindow.day
        let holding = windows.first { $0.contains(second) }
        let open = windows.isEmpty || holding != nil
        let next = holding ?? windows.min { Self.until($0.start, from: second) < Self.until($1.start, from: second) }
        let limit: Int64?? = limits.first { $0.window.contains(second) }.map(\.bytesPerSecond)
        return Verdict(open: open, window: next, limit: limit, secondsToChange: secondsToChange(from: second))
    }

    /// Seconds from `second` to the next edge of any window (where what `verdict` says may change).
    private func secondsToChange(from second: Int) -> Int? {
        let edges = (windows + limits.map(\.window)).filter { $0.start != $0.end }.flatMap { [$0.start, $0.end] }
        return edges.map { Self.until($0, from: second) }.min()
    }

    /// Seconds from `second` until the day reaches `edge` next (a full day when it is there now).
    static func until(_ edge: Int, from second: Int) -> Int {
        let ahead = (edge - second + TimeWindow.day) % TimeWindow.day
        return ahead == 0 ? TimeWindow.day : ahead
    }
}

/// Where the service's schedule stands, as `haul service status --json` and the screen's header show it.
package struct ScheduleStatus: Codable, Sendable, Equatable {
    /// Whether downloads may run now.
    package var open: Bool
    /// "01:00-07:00": the window open now, or the next to open; absent with rate windows alone.
    package var window: String?
    /// The overall cap a rate window sets now, bytes per second (0: none); absent when none holds.
    package var limit: Int64?
    /// When the next change comes: seconds since 1970, the local time it shows ("07:00"), and how far off
    /// it is in seconds; absent when none comes.
    package var next: Double?
    package var nextClock: String?
    package var secondsToNext: Int?

    package init(open: Bool, window: String? = nil, limit: Int64? = nil, next: Double? = nil,
                 nextClock: String? = nil, secondsToNext: Int? = nil) {
        self.open = open
        self.window = window
        self.limit = limit
        self.next = next
        self.nextClock = nextClock
        self.secondsToNext = secondsToNext
    }
}
