import Foundation
import SampleServer
import TestSupport
import Testing
@testable import HaulCore

/// The schedule's pure decision (windows, rate windows, the next change) and the manager's time gate.
@Suite struct QueueScheduleTests {
    static func at(_ clock: String) -> Int { TimeWindow.timeOfDay(clock)! }

    @Test func windowsAreReadAndMayCrossMidnight() throws {
        let night = try #require(TimeWindow("22:00-06:00"))
        #expect(night.contains(Self.at("23:59")) && night.contains(Self.at("00:00")) && night.contains(Self.at("05:59")))
        #expect(!night.contains(Self.at("06:00")) && !night.contains(Self.at("12:00")))
        #expect(night.contains(Self.at("22:00")))
        let day = try #require(TimeWindow("9:30-24:00"))
        #expect(day.contains(Self.at("23:59")) && !day.contains(Self.at("00:00")) && day.text == "09:30-00:00")
        #expect(try #require(TimeWindow("00:00-00:00")).contains(Self.at("13:00")), "the same time twice: all day")
        for bad in ["", "1-2", "25:00-01:00", "01:60-02:00", "24:00-01:00", "01:00", "01:00-02:00-03:00", "a1:00-02:00",
                    "01:00 - 02:00"] {
            #expect(TimeWindow(bad) == nil, "\(bad)")
        }
    }

    @Test func severalWindowsOpenTheQueueAndSayWhenTheNextChangeComes() throws {
        let schedule = try QueueSchedule(schedule: ["01:00-07:00", "22:00-23:00"], limitSchedule: [])
        let closed = schedule.verdict(at: Self.at("12:00"))
        #expect(!closed.open)
        #expect(closed.window?.text == "22:00-23:00", "the next to open")
        #expect(closed.secondsToChange == 10 * 3600)
        let open = schedule.verdict(at: Self.at("02:30"))
        #expect(open.open && open.window?.text == "01:00-07:00" && open.secondsToChange == 4 * 3600 + 1800)
        let late = schedule.verdict(at: Self.at("23:30"))
        #expect(!late.open && late.window?.text == "01:00-07:00" && late.secondsToChange == 5400)
        #expect(QueueSchedule().verdict(at: 0) == QueueSchedule.Verdict(open: true, window: nil, limit: .none,
                                                                         secondsToChange: nil))
    }

    @Test func theRateScheduleGivesTheCapOfEachPartOfTheDay() throws {
        let schedule = try QueueSchedule(schedule: [], limitSchedule: ["08:00-18:00 1M", "18:00-08:00 0"])
        #expect(schedule.verdict(at: Self.at("09:00")).limit == .some(1 << 20))
        #expect(schedule.verdict(at: Self.at("19:00")).limit == .some(nil), "0: no cap")
        #expect(schedule.verdict(at: Self.at("19:00")).open, "no windows: the queue runs")
        #expect(schedule.verdict(at: Self.at("17:59")).secondsToChange == 60)
        let partial = try QueueSchedule(schedule: [], limitSchedule: ["08:00-18:00 500K"])
        #expect(partial.verdict(at: Self.at("20:00")).limit == .none, "outside them: the cap set otherwise")
    }

    @Test func badEntriesAreRefusedWithOneLine() {
        #expect(throws: QueueSchedule.Problem(message: "--schedule 7-9: not a window such as 01:00-07:00")) {
            try QueueSchedule(schedule: ["7-9"], limitSchedule: [])
        }
        #expect(throws: QueueSchedule.Problem(
            message: "--limit-schedule 08:00-18:00 fast: fast is not a rate such as 500K or 2M (0 for none)")) {
            try QueueSchedule(schedule: [], limitSchedule: ["08:00-18:00 fast"])
        }
        #expect(throws: QueueSchedule.Problem.self) { try QueueSchedule(schedule: [], limitSchedule: ["1M"]) }
    }

    /// The manager's gate: a closed window holds a new download as scheduled, and closing it on a running one
    /// stops it as scheduled with its `.part` kept; opening it continues the download to a whole file.
    @Test func theManagersTimeGateHoldsAndStopsAndLetsGo() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 2 << 20) { server in
            let manager = DownloadManager(concurrency: 1)
            await manager.setTimeGate(TimeGate(open: false, now: 0))
            let id = await manager.add(DownloadJob(url: server.downloadURL("medium.bin"), outputDirectory: dir.path))
            #expect(await manager.state(of: id) == .scheduled)
            #expect(await manager.runningCount == 0)
            @Sendable func next(_ wanted: DownloadState) async throws {
                try await within(30, "\(wanted)") {
                    for await event in manager.events where event == .state(id: id, wanted) { return }
                }
            }
            await manager.setTimeGate(TimeGate(open: true, now: 0))
            try await next(.downloading)
            await manager.setTimeGate(TimeGate(open: false, now: 0))
            #expect(await manager.state(of: id) == .scheduled)
            await manager.waitUntilStopped([id])
            #expect(FileManager.default.fileExists(atPath: dir.file("medium.bin.part")))
            #expect(await manager.state(of: id) == .scheduled)
            await manager.setTimeGate(TimeGate(open: true, now: 0))
            try await next(.done)
            #expect(FileManager.default.contents(atPath: dir.file("medium.bin")) == Data(expectedBytes("medium.bin")))
        }
    }

    /// A start time: held until the gate's time passes it.
    @Test func aStartTimeHoldsUntilTheGatesTimePassesIt() async throws {
        let gate = TimeGate(open: true, now: 1000)
        #expect(gate.hold(startAfter: 1001) == .scheduled)
        #expect(gate.hold(startAfter: 1000) == nil)
        #expect(gate.hold(startAfter: nil) == nil)
        #expect(TimeGate(open: false, now: 1000).hold(startAfter: nil) == .scheduled)
    }
}
