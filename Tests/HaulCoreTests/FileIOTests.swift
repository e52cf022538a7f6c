import CLinux
import Dispatch
import Foundation
import NIOConcurrencyHelpers
import SampleServer
import TestSupport
import Testing
@testable import HaulCore

/// The write path under the transfers: direct I/O for whole pages, and the executor downloads run on.
@Suite struct FileIOTests {
    /// A batch as a transfer delivers it: an IOBuffer whose bytes line up with their file offsets.
    func batch(_ bytes: [UInt8], at offset: Int64) -> ByteBatch {
        let buffer = IOBuffer(capacity: bytes.count + IOBuffer.alignment)
        buffer.reset(atFileOffset: offset)
        bytes.withUnsafeBytes { buffer.append($0) }
        return ByteBatch(buffer)
    }

    /// Bytes that differ at every offset and between seeds (the sample server's generated stream: a closure
    /// a byte took seconds in a debug build under the sanitizer).
    func pattern(_ count: Int, seed: Int) -> [UInt8] {
        GeneratedFile(name: "pattern \(seed)", size: count).bytes(offset: 0, count: count)
    }

    @Test func largeAlignedBatchesGoToDiskDirectlyAndEveryByteLands() throws {
        let dir = TempDirectory()
        let path = dir.file("data.part")
        let file = try PartFile(path: path, truncate: true)
        // Unaligned start and end, pieces of every kind: small (buffered), large (direct middle), and a
        // second segment written out of order.
        let pieces: [(offset: Int64, count: Int)] = [(0, 5000), (5000, 700_000), (705_000, 100), (705_100, 1_300_000),
                                                     (3_000_000, 1_048_576), (2_005_100, 994_900)]
        var expected = [UInt8](repeating: 0, count: 3_000_000 + 1_048_576)
        for (index, piece) in pieces.enumerated() {
            let bytes = pattern(piece.count, seed: index)
            expected.replaceSubrange(Int(piece.offset)..<Int(piece.offset) + piece.count, with: bytes)
            try file.write(batch(bytes, at: piece.offset), at: piece.offset)
        }
        try file.sync()
        #expect(file.directBytes > 2_000_000, "the large batches' whole pages went around the page cache")
        try file.close()
        #expect(dir.contents("data.part") == expected)
    }

    /// A small file's body, whole in memory, is written in one go by the only writer of its file: its whole
    /// pages go direct through the file's own descriptor, switched to O_DIRECT for the write and back (no
    /// second descriptor to open, check and close for one write), and the descriptor is left buffered for
    /// what reads it later (a checksum).
    @Test func aFileWrittenInOneGoSwitchesItsOwnDescriptorAndSwitchesItBack() throws {
        let dir = TempDirectory()
        let file = try PartFile(path: dir.file("data.part"), truncate: true)
        let bytes = pattern(102_400 + 1234, seed: 3)
        try file.write(batch(bytes, at: 0), at: 0, completing: true, alone: true)
        let flags = try file.withDescriptor { fcntl($0, F_GETFL) }
        #expect(flags >= 0 && flags & haul_o_direct() == 0, "buffered again")
        #expect(!file.openedSecondDescriptor)
        #expect(file.directBytes == 102_400, "the whole pages went direct, the tail through the page cache")
        try file.close()
        #expect(dir.contents("data.part") == bytes)
    }

    /// A body with a single whole page writes it through the page cache: for one page the device's round
    /// trip costs more than the copy. From two pages on they go direct.
    @Test func aSinglePageGoesThroughThePageCacheAndTwoPagesGoDirect() throws {
        let dir = TempDirectory()
        let page = IOBuffer.alignment
        for pages in [1, 2] {
            let file = try PartFile(path: dir.file("p\(pages).part"), truncate: true)
            let bytes = pattern(pages * page + 100, seed: pages)
            try file.write(batch(bytes, at: 0), at: 0, completing: true, alone: true)
            #expect(file.directBytes == Int64(pages == 1 ? 0 : 2 * page), "\(pages) page(s)")
            try file.close()
            #expect(dir.contents("p\(pages).part") == bytes)
        }
    }

    /// A stream of several batches keeps one second descriptor for all its direct writes (one open for the
    /// whole file), as segments that share the file do.
    @Test func aStreamOfBatchesWritesDirectlyThroughASecondDescriptor() throws {
        let dir = TempDirectory()
        let file = try PartFile(path: dir.file("data.part"), truncate: true)
        let first = pattern(1 << 20, seed: 4)
        let last = pattern(300_001, seed: 5)
        try file.write(batch(first, at: 0), at: 0, alone: true)
        try file.write(batch(last, at: 1 << 20), at: 1 << 20, completing: true, alone: true)
        #expect(file.openedSecondDescriptor)
        #expect(file.directBytes >= (1 << 20) + 290_000)
        try file.close()
        #expect(dir.contents("data.part") == first + last)
    }

    @Test func batchesWhoseMemoryDoesNotLineUpAreWrittenThroughThePageCache() throws {
        let dir = TempDirectory()
        let file = try PartFile(path: dir.file("data.part"), truncate: true)
        let bytes = pattern(1 << 20, seed: 7)
        try file.write(bytes, at: 12_345)  // an array: no alignment promised
        try file.close()
        #expect(file.directBytes == 0)
        #expect(dir.contents("data.part").map { Array($0[12_345...]) } == bytes)
    }

    /// Eight tasks that each wait for all the others: on the 2-thread cooperative pool of this machine
    /// they would never all run at once; on the I/O executor each gets a thread.
    @Test func theIOExecutorRunsBlockingTasksSideBySide() async throws {
        let count = 8
        let arrived = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        let executor = IOExecutor(maximumThreads: 16)
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<count {
                group.addTask(executorPreference: executor) {
                    arrived.signal()
                    return go.wait(timeout: .now() + 20) == .success
                }
            }
            for _ in 0..<count {
                #expect(arrived.wait(timeout: .now() + 20) == .success)
            }
            for _ in 0..<count { go.signal() }
            for try await passed in group { #expect(passed) }
        }
        #expect(executor.threadCount >= count)
        #expect(executor.threadCount <= 16)
    }

    /// Its threads are batch threads: one woken for a download's bytes waits for a free core instead of
    /// preempting the curl thread that woke it (which has the other transfers' bytes to take in).
    @Test func itsThreadsDoNotPreemptTheThreadThatWakesThem() async {
        let executor = IOExecutor(maximumThreads: 2)
        let onExecutor = await Task(executorPreference: executor) { IOExecutor.currentThreadIsBatch }.value
        #expect(onExecutor)
        // The check itself tells the two apart: a thread of the cooperative pool is not one.
        let elsewhere = await Task.detached { IOExecutor.currentThreadIsBatch }.value
        #expect(!elsewhere)
    }

    /// A task that hops between the executor and an actor goes on on the thread it hopped from: the runtime
    /// enqueues each hop from that thread just before the job that hops returns, and waking another thread
    /// for it (or starting one: this one is still busy then) would cost two context switches a hop.
    @Test func aTaskThatHopsToAnActorAndBackKeepsItsThread() async {
        let executor = IOExecutor(maximumThreads: 16)
        let counter = HopCounter()
        await Task(executorPreference: executor) {
            for _ in 0..<50 { await counter.bump() }
        }.value
        #expect(await counter.count == 50)
        #expect(executor.threadCount == 1)
    }

    /// Tasks started in `startingHere` from one of its threads begin on that thread, once the starting job
    /// returns, instead of waking others: a download handing its slot to the next starts it without a wake.
    @Test func tasksStartedFromOneOfItsThreadsBeginThere() async {
        let executor = IOExecutor(maximumThreads: 16)
        let (starter, ranOn) = await Task(executorPreference: executor) { () -> (UInt, [UInt]) in
            let starter = UInt(pthread_self())
            let started = executor.startingHere {
                (0..<20).map { _ in Task(executorPreference: executor) { UInt(pthread_self()) } }
            }
            var ranOn: [UInt] = []
            for task in started { ranOn.append(await task.value) }
            return (starter, ranOn)
        }.value
        #expect(ranOn == Array(repeating: starter, count: 20))
    }

    /// No more than `runningLimit` jobs run at once: the others wait in the queue for a running one to end,
    /// and no thread is started for them meanwhile (eleven threads for eight small downloads crowded the
    /// core the curl thread needs).
    @Test func noMoreThanItsRunningLimitRunAtOnce() async throws {
        let executor = IOExecutor(maximumThreads: 16, runningLimit: 2)
        let arrived = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        let inside = Gauge()
        let tasks = (0..<5).map { _ in
            Task(executorPreference: executor) { () -> Bool in
                inside.enter()
                arrived.signal()
                // Waiting without `blocking`: this thread still counts as running.
                let went = go.wait(timeout: .now() + 20) == .success
                inside.leave()
                return went
            }
        }
        // Each task's first job was queued as it was made; two of them run and wait.
        for _ in 0..<2 { #expect(arrived.wait(timeout: .now() + 20) == .success) }
        #expect(executor.load.queued == 3)
        #expect(executor.load.running == 2)
        #expect(executor.threadCount == 2)
        // Each one let go makes room for the next.
        for _ in 0..<3 {
            go.signal()
            #expect(arrived.wait(timeout: .now() + 20) == .success)
        }
        for _ in 0..<2 { go.signal() }
        for task in tasks { #expect(await task.value) }
        #expect(inside.most == 2)
        #expect(executor.threadCount == 2)
    }

    /// A thread waiting in `blocking` (an fsync, a lock another process holds) does not count as running: a
    /// queued job gets a thread. Counted as running, the waiter here would wait for the very job that ends
    /// its wait, behind a limit of one.
    @Test func aThreadWaitingInBlockingLetsAQueuedJobRun() async {
        let executor = IOExecutor(maximumThreads: 16, runningLimit: 1)
        let entered = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        let waiter = Task(executorPreference: executor) { () -> Bool in
            IOExecutor.blocking {
                entered.signal()
                return go.wait(timeout: .now() + 20) == .success
            }
        }
        #expect(entered.wait(timeout: .now() + 20) == .success)
        let releaser = Task(executorPreference: executor) { _ = go.signal() }
        await releaser.value
        #expect(await waiter.value)
    }

    /// Outside the executor's threads (and nested), `blocking` just runs its body.
    @Test func blockingElsewhereJustRuns() {
        #expect(IOExecutor.blocking { IOExecutor.blocking { 42 } } == 42)
        #expect(IOExecutor.shared.runningLimit >= 2)
    }
}

/// How many are inside at once, and the most so far. A pthread lock under NIO's box: the thread sanitizer
/// sees it, where `Mutex`'s futex is invisible to it and its guarded accesses look like races.
private final class Gauge: Sendable {
    private let state = NIOLockedValueBox((now: 0, most: 0))
    func enter() { state.withLockedValue { $0.now += 1; $0.most = max($0.most, $0.now) } }
    func leave() { state.withLockedValue { $0.now -= 1 } }
    var most: Int { state.withLockedValue { $0.most } }
}

private actor HopCounter {
    var count = 0
    func bump() { count += 1 }
}
