import Foundation
@testable import HaulCore
import NIOConcurrencyHelpers
import SampleServer
import Testing
import TestSupport
@testable import HaulService

/// The queue's gates in the service (issue 75): schedule windows, `--start-at`, the rate schedule,
/// `--on-queue-done` and the sleep inhibitor, on the service's injected clock: the tests advance it, and
/// the local time of day is UTC's.
@Suite struct ScheduleTests {
    /// A service whose clock stands at `second` of a day (UTC) until the test advances it.
    static func with<T: Sendable>(at second: Int, _ configure: (inout Service.Configuration) -> Void,
                                  _ body: (InProcessService, ManualClock) async throws -> T) async throws -> T {
        let manual = ManualClock()
        // Midnight, 1 January 2027 (UTC), and `second` after it; the wall clock moves with the manual one.
        let base = 1_798_761_600.0 + Double(second)
        let start = manual.now
        let clock = ServiceClock(MomentClock(manual), date: {
            let (seconds, attoseconds) = start.duration(to: manual.now).components
            return Date(timeIntervalSince1970: base + Double(seconds) + Double(attoseconds) / 1e18)
        })
        return try await InProcessService.with(clock: clock, configure: { configuration in
            configuration.localSecond = { Int($0.timeIntervalSince1970.rounded(.down)) % 86_400 }
            configuration.inhibitor = RecordingInhibitor()
            // The rate schedule caps the overall rate: on a driver of this test's, not on the one every other
            // test in the process shares (its caps held theirs: stalls, refits and faults came otherwise).
            configuration.driver = CurlDriver()
            configure(&configuration)
        }) { harness in
            // As `ServiceRunner` does before it restores the queue.
            await harness.service.reviewSchedule()
            return try await body(harness, manual)
        }
    }

    static func window(_ text: String) -> QueueSchedule {
        QueueSchedule(windows: [TimeWindow(text)!])
    }

    /// Outside every window a download waits as "scheduled" (not failed, not started); when its window
    /// opens it starts by itself and completes.
    @Test func aDownloadOutsideTheWindowWaitsAsScheduledAndStartsWhenItOpens() async throws {
        try await withSampleServer { server in
            try await Self.with(at: 59 * 60, { $0.schedule = Self.window("01:00-02:00") }) { harness, clock in
                let job = DownloadJob(url: server.downloadURL("small.bin"), outputDirectory: harness.output.path)
                let id = try #require(try await harness.service.add([job]).first?.id)
                try await harness.waitFor(id, "scheduled") { $0 == .scheduled }
                #expect(harness.output.listing().isEmpty, "nothing written before the window")
                #expect(await harness.service.list().first?.state == "scheduled")
                let status = try #require(await harness.service.scheduleStatus)
                #expect(status.open == false && status.window == "01:00-02:00")
                #expect(abs((status.next ?? 0) - (1_798_761_600 + 3600)) < 0.001)
                await clock.waitForSleepers()
                clock.advance(by: .seconds(60))
                try await harness.waitFor(id, "done") { $0 == .done }
                #expect(FileManager.default.contents(atPath: harness.output.file("small.bin"))
                        == Data(expectedBytes("small.bin")))
            }
        }
    }

    /// A window that closes stops what runs, keeping its bytes (`.part` and state stay); the next window
    /// continues it from there, and the file is the server's.
    @Test func aClosingWindowPausesARunningDownloadAndTheNextWindowContinuesIt() async throws {
        try await withSampleServer(rate: 256 << 10) { server in
            try await Self.with(at: 3600 + 59 * 60, { $0.schedule = Self.window("01:00-02:00") }) { harness, clock in
                let job = DownloadJob(url: server.downloadURL("small.bin"), outputDirectory: harness.output.path)
                let id = try #require(try await harness.service.add([job]).first?.id)
                try await harness.waitFor(id, "downloading") { $0 == .downloading }
                await clock.waitForSleepers()
                clock.advance(by: .seconds(60))
                try await harness.waitFor(id, "scheduled") { $0 == .scheduled }
                await harness.service.manager.waitUntilStopped([id])
                let kept = await harness.service.roster[id]?.record.completed ?? 0
                #expect(kept > 0)
                #expect(FileManager.default.fileExists(atPath: harness.output.file("small.bin.part")))
                #expect(!FileManager.default.fileExists(atPath: harness.output.file("small.bin")))
                // The next day's window.
                await clock.waitForSleepers()
                clock.advance(by: .seconds(23 * 3600))
                try await harness.waitFor(id, "done", within: 60) { $0 == .done }
                let data = try #require(FileManager.default.contents(atPath: harness.output.file("small.bin")))
                #expect(data == Data(expectedBytes("small.bin")))
            }
        }
    }

    /// `--start-at`: the download waits as scheduled until its time comes on the service's clock.
    @Test func aStartTimeHoldsTheDownloadUntilItComes() async throws {
        try await withSampleServer { server in
            try await Self.with(at: 10 * 3600, { _ in }) { harness, clock in
                var job = DownloadJob(url: server.downloadURL("small.bin"), outputDirectory: harness.output.path)
                job.startAfter = 1_798_761_600 + 11 * 3600
                let id = try #require(try await harness.service.add([job]).first?.id)
                try await harness.waitFor(id, "scheduled") { $0 == .scheduled }
                await clock.waitForSleepers()
                clock.advance(by: .seconds(3599))
                #expect(await harness.service.roster[id]?.state == .scheduled)
                await clock.waitForSleepers()
                clock.advance(by: .seconds(1))
                try await harness.waitFor(id, "done") { $0 == .done }
            }
        }
    }

    /// The rate schedule sets the overall cap of each part of the day; leaving its windows gives back the
    /// cap the user set.
    @Test func theRateScheduleSetsTheCapOfEachPartOfTheDay() async throws {
        let schedule = try QueueSchedule(schedule: [], limitSchedule: ["08:00-18:00 1M", "18:00-20:00 0"])
        try await Self.with(at: 8 * 3600, { $0.schedule = schedule }) { harness, clock in
            #expect(await harness.service.manager.overallLimit == 1 << 20)
            #expect(await harness.service.scheduleStatus?.limit == 1 << 20)
            await harness.service.setOverallLimit(500 << 10)
            await clock.waitForSleepers()
            clock.advance(by: .seconds(10 * 3600))
            await clock.waitForSleepers()
            #expect(await harness.service.manager.overallLimit == nil, "0 in the schedule: no cap")
            clock.advance(by: .seconds(2 * 3600))
            await clock.waitForSleepers()
            #expect(await harness.service.manager.overallLimit == 500 << 10, "the user's cap again")
        }
    }

    /// `--on-queue-done` runs once when nothing is left running or waiting, with the totals in HAUL_*
    /// variables and no shell; the inhibitor is held while downloads run and released after.
    @Test func theQueueDoneCommandRunsOnceWithTheTotals() async throws {
        let dir = TempDirectory()
        let log = dir.file("done.log")
        // No shell: the words are the program and its arguments; `sh` here is the test's own choice.
        let hook = Hook(command: "/bin/sh -c 'env | grep ^HAUL_ | grep -v -e ^HAUL_HOME= -e ^HAUL_SANITIZED= -e ^HAUL_TSAN= | sort >> \"$0\"' \(log)")
        let inhibitor = RecordingInhibitor()
        try await withSampleServer { server in
            try await Self.with(at: 0, {
                $0.onQueueDone = hook
                $0.inhibitor = inhibitor
            }) { harness, _ in
                let jobs = ["small.bin", "medium.bin"].map {
                    DownloadJob(url: server.downloadURL($0), outputDirectory: harness.output.path)
                }
                let ids = try await harness.service.add(jobs).map(\.id)
                for id in ids { try await harness.waitFor(id, "done", within: 60) { $0 == .done } }
                await harness.service.settled()
                try await within(30, "the hook") { await harness.service.manager.waitForHooks() }
                #expect(inhibitor.holds >= 1)
                #expect(inhibitor.isHeld == false)
            }
        }
        let text = try String(contentsOfFile: log, encoding: .utf8)
        #expect(text == """
            HAUL_BYTES=\((1 << 20) + (20 << 20))
            HAUL_CANCELLED=0
            HAUL_DONE=2
            HAUL_DOWNLOADS=2
            HAUL_FAILED=0
            HAUL_STATUS=done

            """)
    }

    /// Where the system runs logind, the real lock shows in `systemd-inhibit --list` while held.
    @Test(.enabled(if: LogindInhibitor.systemdBooted)) func logindHoldsTheSleepLockWhileHeld() async throws {
        let inhibitor = LogindInhibitor()
        inhibitor.hold()
        defer { inhibitor.release() }
        let listing = try await within(10, "systemd-inhibit --list") {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["systemd-inhibit", "--list", "--no-pager"]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
        #expect(listing.contains("haul"))
    }

    /// Without logind the lock is silently absent: no child, nothing said.
    @Test func withoutLogindTheLockIsSilentlyAbsent() {
        let inhibitor = LogindInhibitor(program: "/nonexistent/systemd-inhibit", booted: false)
        inhibitor.hold()
        inhibitor.release()
        #expect(inhibitor.argv.contains("--what=sleep") && inhibitor.argv.contains("--mode=block"))
    }
}

/// An inhibitor that only counts: the decision of when to hold and release, without logind.
final class RecordingInhibitor: SleepInhibitor {
    private let state = NIOLockedValueBox((held: false, holds: 0))

    func hold() {
        state.withLockedValue {
            if !$0.held { $0.holds += 1 }
            $0.held = true
        }
    }

    func release() {
        state.withLockedValue { $0.held = false }
    }

    var isHeld: Bool { state.withLockedValue { $0.held } }
    var holds: Int { state.withLockedValue { $0.holds } }
}
