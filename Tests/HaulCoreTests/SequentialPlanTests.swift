import Testing
@testable import HaulCore

/// `--sequential`: the plan hands the file out front to back, so that its contiguous prefix grows steadily.
@Suite struct SequentialPlanTests {
    /// Chunks of four times the smallest split, lowest first, whatever the number of connections.
    @Test func chunksGoOutLowestFirst() {
        let plan = SegmentPlan(missing: [ByteRange(0, 100)], parts: 3, minimumSplit: 5, inOrder: true)
        #expect((0..<3).compactMap { plan.claim(for: $0) } == [ByteRange(0, 20), ByteRange(20, 40), ByteRange(40, 60)])
        _ = plan.advance(1, to: 40)
        #expect(plan.claim(for: 1) == ByteRange(60, 80))
        #expect(plan.claim(for: 0) == ByteRange(80, 100))
    }

    /// The probe's range is worker 0's; the chunks begin after it, and the holes of a resumed part are
    /// fetched in the order they lie in the file.
    @Test func theProbeAndTheHolesComeFirst() {
        let plan = SegmentPlan(missing: [ByteRange(10, 50), ByteRange(70, 90)], parts: 2, held: ByteRange(0, 10),
                               minimumSplit: 5, inOrder: true)
        #expect(plan.end(of: 0) == 10)
        #expect(plan.claim(for: 1) == ByteRange(10, 30))
        #expect(plan.claim(for: 0) == ByteRange(30, 50))
        #expect(plan.claim(for: 0) == ByteRange(70, 90))
    }

    /// With nothing left to claim, a freed connection takes the back half of the front-most range still
    /// being fetched, not of the largest.
    @Test func aFreedConnectionHelpsTheFrontNotTheLargest() {
        let plan = SegmentPlan(missing: [ByteRange(0, 60)], parts: 3, minimumSplit: 5, inOrder: true)
        #expect((0..<3).compactMap { plan.claim(for: $0) } == [ByteRange(0, 20), ByteRange(20, 40), ByteRange(40, 60)])
        _ = plan.advance(0, to: 8)  // 12 left: the front-most
        _ = plan.advance(1, to: 21)  // 19 left: the largest
        _ = plan.advance(2, to: 60)
        #expect(plan.claim(for: 2) == ByteRange(14, 20))
        #expect(plan.end(of: 0) == 14)
        #expect(plan.end(of: 1) == 40)
    }

    /// A connection that lags at the front is helped once the others have run `lookahead` ahead of it
    /// (twice the chunks the connections hold): the prefix never waits on it alone.
    @Test func theOthersHelpALaggingFront() {
        let plan = SegmentPlan(missing: [ByteRange(0, 400)], parts: 2, minimumSplit: 5, inOrder: true)
        #expect(plan.lookahead == 80)
        #expect(plan.claim(for: 0) == ByteRange(0, 20))
        #expect(plan.claim(for: 1) == ByteRange(20, 40))
        #expect(plan.claim(for: 1) == ByteRange(40, 60))
        #expect(plan.claim(for: 1) == ByteRange(60, 80))
        #expect(plan.claim(for: 1) == ByteRange(80, 100))
        // The next chunk, at 100, lies more than 80 past worker 0's byte 0: worker 1 takes half of its rest.
        #expect(plan.claim(for: 1) == ByteRange(10, 20))
        #expect(plan.end(of: 0) == 10)
        // The 10 bytes left at the front are just enough to halve once more.
        #expect(plan.claim(for: 1) == ByteRange(5, 10))
        // Nothing at the front to halve any more: on to the next chunk.
        #expect(plan.claim(for: 1) == ByteRange(100, 120))
    }

    /// Not in order, the same plan spreads the connections over the whole file (what `--sequential` changes).
    @Test func withoutItTheConnectionsSpreadOverTheFile() {
        let plan = SegmentPlan(missing: [ByteRange(0, 100)], parts: 3, minimumSplit: 5)
        #expect(plan.lookahead == nil)
        #expect((0..<3).compactMap { plan.claim(for: $0) }.last == ByteRange(50, 100))
    }
}
