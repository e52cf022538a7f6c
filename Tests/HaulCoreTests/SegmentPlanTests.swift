import Foundation
import NIOConcurrencyHelpers
import SampleServer
import TestSupport
import Testing
@testable import HaulCore

@Suite struct SegmentPlanTests {
    @Test func idleWorkersStealTheBackHalfOfTheLargestRange() {
        let plan = SegmentPlan(missing: [ByteRange(0, 64)], minimumSplit: 4)
        #expect(plan.claim(for: 0) == ByteRange(0, 64))
        #expect(plan.claim(for: 1) == ByteRange(32, 64))
        #expect(plan.end(of: 0) == 32)
        #expect(plan.claim(for: 2) == ByteRange(16, 32))  // a tie between 0 and 1: the lower worker
        _ = plan.advance(1, to: 60)
        // Worker 1 has 4 bytes left: below 2 * minimumSplit, it is not split; 0 and 2 tie again.
        #expect(plan.claim(for: 3) == ByteRange(8, 16))
        #expect(plan.end(of: 0) == 8)
    }

    @Test func theMissingBytesArePreSplitIntoOnePiecePerConnection() {
        let plan = SegmentPlan(missing: [ByteRange(0, 100)], parts: 4, minimumSplit: 10)
        let pieces = (0..<4).compactMap { plan.claim(for: $0) }
        #expect(pieces == [ByteRange(0, 25), ByteRange(25, 50), ByteRange(50, 75), ByteRange(75, 100)])
        let tiny = SegmentPlan(missing: [ByteRange(0, 30)], parts: 4, minimumSplit: 10)
        #expect(tiny.claim(for: 0) == ByteRange(0, 15))
        #expect(tiny.claim(for: 1) == ByteRange(15, 30))
    }

    @Test func missingRangesAreHandedOutFirstInOrder() {
        let plan = SegmentPlan(missing: [ByteRange(10, 20), ByteRange(30, 40)], minimumSplit: 100)
        #expect(plan.claim(for: 0) == ByteRange(10, 20))
        #expect(plan.claim(for: 1) == ByteRange(30, 40))
        #expect(plan.claim(for: 2) == nil)
    }

    /// The probe counts as part of worker 0's piece: the pieces are cut over the whole file, and the rest of
    /// worker 0's piece is its own next range, so the connections end about together.
    @Test func theProbeIsTheStartOfTheFirstConnectionsPiece() {
        let plan = SegmentPlan(missing: [ByteRange(10, 100)], parts: 4, held: ByteRange(0, 10), minimumSplit: 10)
        #expect(plan.end(of: 0) == 10)
        #expect([1, 2, 3].compactMap { plan.claim(for: $0) } == [ByteRange(25, 50), ByteRange(50, 75),
                                                                  ByteRange(75, 100)])
        #expect(plan.claim(for: 0) == ByteRange(10, 25))
    }

    /// A first connection that never gets to its own next range (it failed) leaves it to the others.
    @Test func aReservedRangeNobodyBeganGoesToAnotherWorker() {
        let plan = SegmentPlan(missing: [ByteRange(10, 100)], parts: 2, held: ByteRange(0, 10), minimumSplit: 10)
        #expect(plan.claim(for: 1) == ByteRange(50, 100))
        #expect(plan.claim(for: 1) == ByteRange(10, 50))
        #expect(plan.claim(for: 1) == nil)  // worker 0's 10 bytes are too few to split
    }

    /// The race lost by the others: each stops where it is and its rest (and a reserved range) goes back to
    /// the one kept, which then claims it all; the retired get nothing more.
    @Test func retiredWorkersGiveTheirRestBack() {
        let plan = SegmentPlan(missing: [ByteRange(10, 100)], parts: 3, held: ByteRange(0, 10), minimumSplit: 10)
        let first = plan.claim(for: 1)
        #expect(first == ByteRange(25, 50))
        _ = plan.advance(1, to: 35)
        plan.retire(allBut: 0, of: 3)
        #expect(plan.end(of: 1) == 35, "worker 1 stops where it is")
        #expect(plan.claim(for: 1) == nil)
        #expect(plan.claim(for: 2) == nil, "nor does one that had not begun get anything")
        var ranges: [ByteRange] = []
        while let range = plan.claim(for: 0) {
            ranges.append(range)
            _ = plan.advance(0, to: range.end)
        }
        #expect(ByteRange.merged(ranges + [ByteRange(0, 10), ByteRange(25, 35)]) == [ByteRange(0, 100)], "\(ranges)")
    }

    /// Sent home, a worker waits with no connection; recalled, it claims work again (half of the largest range).
    @Test func retiredWorkersWaitAndComeBackWhenRecalled() async {
        let plan = SegmentPlan(missing: [ByteRange(0, 100)], parts: 2, minimumSplit: 10)
        #expect(plan.claim(for: 0) == ByteRange(0, 50))
        plan.retire(allBut: 0, of: 2)
        #expect(plan.claim(for: 1) == nil)
        #expect(plan.isRetired(1))
        async let back = plan.waitForWork(1)
        #expect(plan.recall() <= 1)
        #expect(await back, "recalled")
        #expect(!plan.isRetired(1))
        _ = plan.advance(0, to: 20)
        #expect(plan.claim(for: 1) == ByteRange(50, 100), "the unfetched range given back by the retire")
        #expect(plan.claim(for: 1) == ByteRange(35, 50), "then the back half of worker 0's 30 left")
    }

    /// A recall that comes between a retired worker's last claim (nothing: it was sent home) and its wait
    /// still brings it back; a worker that was never sent home has nothing to wait for.
    @Test func aRecallBeforeTheWaitStillBringsTheWorkerBack() async {
        let plan = SegmentPlan(missing: [ByteRange(0, 100)], parts: 2, minimumSplit: 10)
        #expect(plan.claim(for: 0) == ByteRange(0, 50))
        plan.retire(allBut: 0, of: 2)
        #expect(plan.claim(for: 1) == nil)
        #expect(plan.recall() == 1, "not waiting yet, but brought back all the same (so the fact is said)")
        #expect(await plan.waitForWork(1), "recalled before it waited")
        #expect(plan.claim(for: 1) == ByteRange(50, 100))
    }

    /// A connection that fails gives back what it had not written: the rest of its range (from where its
    /// writes reached, not where its deliveries did) and claims nothing more; the others take it.
    @Test func aFailedWorkersRestGoesToTheOthers() {
        // Four pieces of 25 bytes, none large enough to be split again.
        let plan = SegmentPlan(missing: [ByteRange(10, 100)], parts: 4, held: ByteRange(0, 10), minimumSplit: 20)
        #expect([1, 2, 3].compactMap { plan.claim(for: $0) } == [ByteRange(25, 50), ByteRange(50, 75),
                                                                  ByteRange(75, 100)])
        _ = plan.advance(2, to: 70)
        #expect(plan.giveBack(2, writtenUpTo: 60) == 3, "workers 0, 1 and 3 fetch on")
        #expect(plan.claim(for: 2) == nil, "a failed worker claims nothing more")
        plan.left(2)
        #expect(plan.giveBack(0, writtenUpTo: 4) == 2, "the probe's connection fails too, before its own next range")
        #expect(plan.giveBack(3, writtenUpTo: 75) == 1, "so does worker 3, before its first byte")
        plan.left(0)
        _ = plan.advance(1, to: 50)
        var ranges: [ByteRange] = []
        while let range = plan.claim(for: 1) {
            ranges.append(range)
            _ = plan.advance(1, to: range.end)
        }
        #expect(ranges == [ByteRange(4, 10), ByteRange(10, 25), ByteRange(60, 75), ByteRange(75, 100)], "\(ranges)")
    }

    /// Two pieces of 50 bytes (too small to split): worker 0 has written its own and finds nothing to claim,
    /// worker 1 is still fetching 50..<100.
    static func workerZeroDoneWorkerOneFetching() -> SegmentPlan {
        let plan = SegmentPlan(missing: [ByteRange(0, 100)], parts: 2, minimumSplit: 30)
        #expect(plan.claim(for: 0) == ByteRange(0, 50))
        #expect(plan.claim(for: 1) == ByteRange(50, 100))
        _ = plan.advance(0, to: 50)
        #expect(plan.claim(for: 0) == nil)
        return plan
    }

    /// With nothing to claim while another still fetches, a worker waits, and takes what that one gives back
    /// when it fails; with nobody fetching, it has nothing to wait for.
    @Test func anIdleWorkerWaitsForWhatAFailingOneGivesBack() async {
        let plan = Self.workerZeroDoneWorkerOneFetching()
        async let woken = plan.waitForWork(0)
        plan.giveBack(1, writtenUpTo: 80)
        #expect(await woken, "woken (or not yet waiting: the range is there to claim)")
        #expect(plan.claim(for: 0) == ByteRange(80, 100))
        _ = plan.advance(0, to: 100)
        #expect(plan.claim(for: 0) == nil)
        #expect(await plan.waitForWork(0) == false, "nobody else fetches")
    }

    /// An idle worker is let go when the others end without failing.
    @Test func anIdleWorkerIsLetGoWhenTheOthersEnd() async {
        let plan = Self.workerZeroDoneWorkerOneFetching()
        async let idle = plan.waitForWork(0)
        _ = plan.advance(1, to: 100)
        #expect(plan.claim(for: 1) == nil)
        #expect(await plan.waitForWork(1) == false)
        plan.left(1)
        #expect(await idle == false)
    }

    /// When the one that went on has left (done, or failed), a worker still waiting is let go, whichever
    /// came first; nobody is recalled after that.
    @Test func waitingWorkersAreLetGoWhenTheOneKeptLeaves() async {
        let plan = SegmentPlan(missing: [ByteRange(0, 100)], parts: 3, minimumSplit: 10)
        _ = plan.claim(for: 0)
        plan.retire(allBut: 0, of: 3)
        async let early = plan.waitForWork(1)
        plan.left(0)
        // Worker 1 may be waiting already or not yet; worker 2 comes to wait after the kept one left. Until
        // both wait, one of them could still fetch if recalled: they are let go together.
        #expect(await plan.waitForWork(2) == false)
        #expect(await early == false)
        #expect(plan.recall() == 0)
    }

    @Test func aBatchPastAShrunkenEndIsCut() async throws {
        let plan = SegmentPlan(missing: [ByteRange(0, 100)], minimumSplit: 10)
        _ = plan.claim(for: 0)
        _ = plan.claim(for: 1)  // worker 0 now ends at 50
        #expect(plan.advance(0, to: 40) == 50)
        #expect(plan.end(of: 0) == 50)
    }
}
