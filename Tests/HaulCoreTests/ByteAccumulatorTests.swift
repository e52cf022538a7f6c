import TestSupport
import Testing
@testable import HaulCore

@Suite struct ByteAccumulatorTests {
    let clock = ManualClock()

    func run(_ steps: [(Duration, [UInt8])], total: Int64?, start: Int64 = 0, in dir: TempDirectory)
        async throws -> [DownloadProgress]
    {
        let file = try PartFile(path: dir.file("x.part"), truncate: false)
        let bytes = ScriptedBytes(steps: steps.map { ($0.0, $0.1) }, clock: clock)
        var seen: [DownloadProgress] = []
        for try await progress in ByteAccumulator(bytes, writingTo: file, startingAt: start, total: total, clock: clock) {
            seen.append(progress)
        }
        return seen
    }

    @Test func batchesCompleteOnOnePercentOfTheFile() async throws {
        let dir = TempDirectory()
        // 10 MiB file: a batch is 100 KiB+; chunks of 40 KiB arriving instantly make a batch every 3 chunks.
        let chunk = [UInt8](repeating: 7, count: 40 * 1024)
        let steps = Array(repeating: (Duration.zero, chunk), count: 9)
        let seen = try await run(steps, total: 10 * 1024 * 1024, in: dir)
        #expect(ByteAccumulator<ScriptedBytes, ManualClock>.batchSize(total: 10 * 1024 * 1024) == 104_857)
        let expected: [Int64] = [122_880, 122_880, 122_880]
        #expect(seen.map(\.batchBytes) == expected)
        #expect(seen.last?.completed == Int64(368_640))
        #expect(dir.contents("x.part") == Array(repeating: 7, count: 360 * 1024))
    }

    @Test func smallFilesUseTheSixtyFourKiBFloor() {
        #expect(ByteAccumulator<ScriptedBytes, ManualClock>.batchSize(total: 1000) == 65_536)
        #expect(ByteAccumulator<ScriptedBytes, ManualClock>.batchSize(total: nil) == 65_536)
    }

    @Test func aSlowStreamReportsEveryTimeWindow() async throws {
        let dir = TempDirectory()
        // 1 KiB every 60 ms: the 100 ms window closes a batch every second chunk, long before 64 KiB.
        let steps = Array(repeating: (Duration.milliseconds(60), [UInt8](repeating: 1, count: 1024)), count: 6)
        let seen = try await run(steps, total: 1 << 30, in: dir)
        #expect(seen.map(\.batchBytes) == [2048, 2048, 2048])
        #expect(seen.map(\.completed) == [2048, 4096, 6144])
        // 1 KiB per 60 ms is about 17 KB/s.
        let rate = try #require(seen.last?.bytesPerSecond)
        #expect(abs(rate - 1024 / 0.060) < 500)
    }

    @Test func theEndOfTheStreamCompletesTheLastBatch() async throws {
        let dir = TempDirectory()
        let seen = try await run([(.zero, [1, 2, 3])], total: 3, in: dir)
        #expect(seen == [DownloadProgress(completed: 3, batchBytes: 3, total: 3, bytesPerSecond: 0)])
    }

    @Test func anEmptyBodyStillReportsOnce() async throws {
        let dir = TempDirectory()
        let seen = try await run([], total: 0, in: dir)
        #expect(seen.map(\.completed) == [0])
    }

    @Test func resumingWritesAtTheStartOffset() async throws {
        let dir = TempDirectory()
        let file = try PartFile(path: dir.file("x.part"), truncate: true)
        try file.write([9, 9, 9, 9], at: 0)
        let seen = try await run([(.zero, [5, 6])], total: 6, start: 4, in: dir)
        #expect(seen.last?.completed == 6)
        #expect(dir.contents("x.part") == [9, 9, 9, 9, 5, 6])
    }
}
