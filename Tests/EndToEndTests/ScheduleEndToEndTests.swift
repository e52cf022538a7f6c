import Foundation
import Glibc
import HaulCore
import SampleServer
import Testing
import TestSupport

/// Schedules, `--start-at` and `--on-queue-done` through the real `haul` and its service (issue 75). Time is
/// the system's here: a window is chosen to be closed now (a few hours ahead), and what happens as windows
/// open is the in-process tests' (`ScheduleTests`, on the service's injected clock).
@Suite(.serialized) struct ScheduleEndToEndTests {
    struct Home {
        let dir = TempDirectory()
        let service = ServiceHome()

        var configPath: String { dir.file("config/haul/config.toml") }
        var environment: [String: String] {
            service.environment.merging(["HOME": dir.path, "XDG_CONFIG_HOME": dir.file("config")]) { $1 }
        }

        func write(_ text: String) throws {
            try FileManager.default.createDirectory(atPath: dir.file("config/haul"), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: URL(fileURLWithPath: configPath))
        }

        func haul(_ arguments: [String]) async throws -> HaulProcess.Exit {
            try await HaulProcess.run(arguments, in: dir.path, environment: environment)
        }

        func json(_ arguments: [String]) async throws -> Any {
            let exit = try await haul(arguments)
            #expect(exit.status == 0, "\(arguments): \(exit.stderr)")
            return try JSONSerialization.jsonObject(with: Data(exit.stdout.utf8))
        }
    }

    /// "HH:MM" of the local time `hours` from now.
    static func clock(inHours hours: Int) -> String {
        var time = time(nil) + time_t(hours * 3600)
        var parts = tm()
        localtime_r(&time, &parts)
        return String(format: "%02d:%02d", parts.tm_hour, parts.tm_min)
    }

    /// A window closed now: a download waits as scheduled, `ls` and `status` say so, and nothing is written.
    @Test func outsideTheWindowTheServiceHoldsTheDownloadAsScheduled() async throws {
        let home = Home()
        let window = "\(Self.clock(inHours: 2))-\(Self.clock(inHours: 3))"
        try home.write("schedule = [\"\(window)\"]\nlimit-schedule = [\"00:00-00:00 1M\"]\n")
        try await withSampleServer { server in
            let add = try await home.haul(["add", "-o", "dl", server.downloadURL("small.bin")])
            #expect(add.status == 0, "\(add.stderr)")
            let listed = try #require(try await home.json(["ls", "--json"]) as? [[String: Any]])
            #expect(listed.first?["state"] as? String == "scheduled")
            let table = try await home.haul(["ls"])
            #expect(table.stdoutLines.count == 2 && table.stdoutLines[1].contains("scheduled"))
            let status = try #require(try await home.json(["service", "status", "--json"]) as? [String: Any])
            let schedule = try #require(status["schedule"] as? [String: Any], "\(status)")
            #expect(schedule["open"] as? Bool == false)
            #expect(schedule["window"] as? String == window)
            #expect(schedule["limit"] as? Int == 1 << 20)
            #expect(schedule["nextClock"] as? String == String(window.prefix(5)), "the window's start")
            #expect(status["limit"] as? Int == 1 << 20, "the rate window's cap is in force")
            #expect(!FileManager.default.fileExists(atPath: home.dir.file("dl/small.bin.part")), "nothing written")
            #expect(!FileManager.default.fileExists(atPath: home.dir.file("dl/small.bin")))
        }
    }

    /// `--start-at`: held as scheduled until then; a plain run refuses it; a bad time is one line, exit 2.
    @Test func aStartTimeHoldsTheDownloadInTheService() async throws {
        let home = Home()
        try await withSampleServer { server in
            let add = try await home.haul(["add", "--start-at", Self.clock(inHours: 5), "-o", "dl",
                                           server.downloadURL("small.bin")])
            #expect(add.status == 0, "\(add.stderr)")
            let listed = try #require(try await home.json(["ls", "--json"]) as? [[String: Any]])
            #expect(listed.first?["state"] as? String == "scheduled")
            let plain = try await home.haul(["--plain", "--start-at", "23:00", server.downloadURL("small.bin")])
            #expect(plain.status == 2)
            #expect(plain.stderr == "haul: --start-at waits in the service: use haul add --start-at (or the full screen)\n")
            let bad = try await home.haul(["add", "--start-at", "25:00", server.downloadURL("small.bin")])
            #expect(bad.status == 2)
            #expect(bad.stderr.contains("--start-at 25:00: not a time of day such as 23:30"), "\(bad.stderr)")
        }
    }

    /// A bad window in the config: one line naming the file, the line and the key, exit 2, no service.
    @Test func aBadScheduleIsOneLine() async throws {
        let home = Home()
        try home.write("schedule = [\"7-9\"]\n")
        let exit = try await home.haul(["ls"])
        #expect(exit.status == 2)
        #expect(exit.stderr == "haul: \(home.configPath):1: schedule: --schedule 7-9: not a window such as 01:00-07:00\n")
        #expect(!FileManager.default.fileExists(atPath: home.service.socket))
    }

    /// The service runs `--on-queue-done` once the queue has run dry, without a shell, with the totals.
    @Test func theServiceRunsTheQueueDoneCommand() async throws {
        let home = Home()
        let fifo = home.dir.file("done.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        // The test's own `sh`, named as the program: haul itself runs no shell.
        try home.write("on-queue-done = \"/bin/sh -c 'env | grep ^HAUL_ | grep -v -e ^HAUL_HOME= -e ^HAUL_SANITIZED= -e ^HAUL_TSAN= | sort > \\\"$0\\\"' \(fifo)\"\n")
        try await withSampleServer { server in
            let add = try await home.haul(["add", "-o", "dl", server.downloadURL("small.bin"),
                                           server.downloadURL("medium.bin")])
            #expect(add.status == 0, "\(add.stderr)")
            // Opening the FIFO waits for the hook to open it for writing.
            let text = try await within(60, "the queue-done command") {
                let reader = try #require(FileHandle(forReadingAtPath: fifo))
                return String(decoding: try reader.readToEnd() ?? Data(), as: UTF8.self)
            }
            #expect(text == """
                HAUL_BYTES=\((1 << 20) + (20 << 20))
                HAUL_CANCELLED=0
                HAUL_DONE=2
                HAUL_DOWNLOADS=2
                HAUL_FAILED=0
                HAUL_STATUS=done

                """)
        }
    }
}
