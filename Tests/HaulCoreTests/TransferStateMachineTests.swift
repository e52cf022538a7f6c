import TestSupport
import Testing
@testable import HaulCore

@Suite struct TransferStateMachineTests {
    func receive(_ machine: inout TransferStateMachine, _ count: Int, value: UInt8 = 1,
                 at now: ContinuousClock.Instant = .now) -> TransferStateMachine.ReceiveAction {
        let bytes = [UInt8](repeating: value, count: count)
        return bytes.withUnsafeBytes { machine.receive($0, now: now) }
    }

    /// Parks a consumer, lets `body` act as the producer, and returns what the consumer was resumed with
    /// (nil when `body` did not resume it; the test then resumes it itself).
    func parked(_ machine: inout TransferStateMachine, at now: ContinuousClock.Instant,
                _ body: (inout TransferStateMachine) -> TransferStateMachine.BytesContinuation?) async throws -> ByteBatch? {
        guard case .wait = machine.next() else { Issue.record("the consumer should wait"); return nil }
        return try await withCheckedThrowingContinuation { (continuation: TransferStateMachine.BytesContinuation) in
            machine.park(continuation, now: now)
            if body(&machine) == nil { continuation.resume(returning: nil) }
        }
    }

    @Test func pausesAtTheHighWatermarkAndResumesWhenTheConsumerTakes() {
        var machine = TransferStateMachine(highWatermark: 100)
        guard case .buffered = receive(&machine, 60) else { Issue.record("first chunk not buffered"); return }
        guard case .buffered = receive(&machine, 60) else { Issue.record("second chunk not buffered"); return }
        guard case .pause = receive(&machine, 60) else { Issue.record("third chunk should pause"); return }
        #expect(machine.producerPaused)
        #expect(machine.pauseCount == 1)
        #expect(machine.peakBuffered == 120)
        guard case .bytes(let batch, let resume) = machine.next() else { Issue.record("no bytes"); return }
        #expect(batch.count == 120)
        #expect(resume)
        #expect(!machine.producerPaused)
        guard case .wait = machine.next() else { Issue.record("should wait"); return }
    }

    @Test func endAndFailureComeAfterTheBufferedBytes() {
        var machine = TransferStateMachine(highWatermark: 100)
        _ = receive(&machine, 10)
        _ = machine.finished(HaulError(.network, "reset"))
        guard case .bytes(let batch, false) = machine.next() else { Issue.record("bytes first"); return }
        #expect(batch.count == 10)
        guard case .fail(let error) = machine.next() else { Issue.record("then the failure"); return }
        #expect((error as? HaulError)?.category == .network)
    }

    @Test func cancelRefusesFurtherBytesAndAsksToRemoveTheHandleOnce() {
        var machine = TransferStateMachine(highWatermark: 100)
        #expect(machine.cancel().removeHandle)
        guard case .abort = receive(&machine, 10) else { Issue.record("should abort"); return }
        #expect(!machine.cancel().removeHandle)
        guard case .fail(let error) = machine.next() else { Issue.record("should fail"); return }
        #expect(error is CancellationError)
    }

    @Test func aBodilessAnswerFailsAWaitingHeadOnlyOnError() {
        var machine = TransferStateMachine(highWatermark: 100)
        let action = machine.finished(HaulError(.network, "refused"))
        #expect(action.failHead == nil)  // nobody was waiting
        guard case .failed(let error) = machine.head else { Issue.record("head should fail"); return }
        #expect((error as? HaulError)?.message == "refused")
    }

    @Test func aParkedConsumerIsWokenOnlyForABatchWorthTheHandOff() async throws {
        var machine = TransferStateMachine(highWatermark: 1 << 20, deliverThreshold: 1000, maxDelay: .milliseconds(40))
        let start = ContinuousClock.now
        let batch = try await parked(&machine, at: start) { machine in
            guard case .buffered = receive(&machine, 600, at: start) else { Issue.record("below the threshold"); return nil }
            guard case .deliver(let consumer, let batch) = receive(&machine, 600, at: start) else {
                Issue.record("at the threshold the consumer gets the batch")
                return nil
            }
            consumer.resume(returning: batch)
            return consumer
        }
        #expect(batch?.count == 1200)
    }

    @Test func bytesBelowTheThresholdReachAParkedConsumerAfterTheDelay() async throws {
        var machine = TransferStateMachine(highWatermark: 1 << 20, deliverThreshold: 1000, maxDelay: .milliseconds(40))
        let start = ContinuousClock.now
        let batch = try await parked(&machine, at: start) { machine in
            _ = receive(&machine, 10, at: start)
            let early = machine.flushIfDue(now: start.advanced(by: .milliseconds(39)))
            #expect(early.deliver == nil)
            #expect(early.pending)
            let due = machine.flushIfDue(now: start.advanced(by: .milliseconds(40)))
            guard let (consumer, batch) = due.deliver else { Issue.record("due after the delay"); return nil }
            #expect(!due.pending)
            consumer.resume(returning: batch)
            return consumer
        }
        #expect(batch?.count == 10)
    }

    @Test func theEndHandsAParkedConsumerWhatWaitedBelowTheThreshold() async throws {
        var machine = TransferStateMachine(highWatermark: 1 << 20, deliverThreshold: 1000)
        let batch = try await parked(&machine, at: .now) { machine in
            _ = receive(&machine, 10)
            guard let (consumer, result) = machine.finished(nil).resumeConsumer else {
                Issue.record("the end wakes the consumer")
                return nil
            }
            consumer.resume(with: result)
            return consumer
        }
        #expect(batch?.count == 10)
        guard case .end = machine.next() else { Issue.record("then the end"); return }
    }

    @Test func buffersComeBackAndAreReusedAlignedToTheFileOffset() {
        var machine = TransferStateMachine(highWatermark: 1 << 20, deliverThreshold: 1)
        machine.bodyStarts(at: 5000)
        var expectedOffset: Int64 = 5000
        for round in 0..<50 {
            _ = receive(&machine, 70_000 + round, value: UInt8(round))
            guard case .bytes(let batch, _) = machine.next() else { Issue.record("no batch"); return }
            #expect(batch.count == 70_000 + round)
            #expect(batch.allSatisfy { $0 == UInt8(round) })
            batch.withUnsafeBytes { bytes in
                // Each byte's address is congruent to its file offset modulo the page size (direct I/O).
                #expect(Int64(UInt(bitPattern: bytes.baseAddress!) % 4096) == expectedOffset % 4096)
            }
            expectedOffset += Int64(batch.count)
            guard case .buffer(let buffer) = batch.storage else { Issue.record("not a transfer buffer"); return }
            machine.recycle(buffer)
        }
        #expect(machine.buffersAllocated == 1)
    }

    @Test func aReturnedBufferStillHeldElsewhereIsNotFilledAgain() {
        var machine = TransferStateMachine(highWatermark: 1 << 20, deliverThreshold: 1)
        _ = receive(&machine, 1000, value: 1)
        guard case .bytes(let kept, _) = machine.next(), case .buffer(let buffer) = kept.storage else {
            Issue.record("no batch")
            return
        }
        machine.recycle(buffer)
        _ = receive(&machine, 1000, value: 2)
        #expect(machine.buffersAllocated == 2)
        #expect(kept.allSatisfy { $0 == 1 })
    }
}
