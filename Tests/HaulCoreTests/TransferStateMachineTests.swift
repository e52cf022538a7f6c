import TestSupport
import Testing
@testable import HaulCore

@Suite struct TransferStateMachineTests {
    func receive(_ machine: inout TransferStateMachine, _ count: Int, value: UInt8 = 1,
                 at now: TransferInstant = .now) -> TransferStateMachine.ReceiveAction {
        let bytes = [UInt8](repeating: value, count: count)
        return bytes.withUnsafeBytes { machine.receive($0, now: now) }
    }

    /// Parks a consumer, lets `body` act as the producer, and returns what the consumer was resumed with
    /// (nil when `body` did not resume it; the test then resumes it itself).
    func parked(_ machine: inout TransferStateMachine, at now: TransferInstant,
                _ body: (inout TransferStateMachine) -> TransferStateMachine.BytesWaiter?) async throws -> ByteBatch? {
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
        let start = TransferInstant.now
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
        let start = TransferInstant.now
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

    // MARK: a small answer's head waits for its body

    func answer(length: Int) -> ResponseHead {
        ResponseHead(status: 200, headers: [(name: "Content-Length", value: String(length))], effectiveURL: "http://h/f")
    }

    /// Waits for the head as `TransferCore.head()` does, lets `body` act as the curl thread, and returns the
    /// head the waiter was resumed with (nil when `body` did not resume it; the test then resumes it itself).
    func waitingForHead(_ machine: inout TransferStateMachine,
                        _ body: (inout TransferStateMachine) -> TransferStateMachine.HeadDelivery?) async throws -> ResponseHead? {
        try await withCheckedThrowingContinuation { (continuation: TransferStateMachine.HeadContinuation) in
            if let ready = machine.parkForHead(continuation) {
                Issue.record("the head should not be there yet")
                continuation.resume(with: ready)
                return
            }
            if let (waiter, head) = body(&machine) { waiter.resume(returning: head) } else {
                continuation.resume(throwing: CancellationError())
            }
        }
    }

    /// A body the head says is below a batch: the consumer wakes once, at the end, for head, bytes and end.
    @Test func aSmallAnswersHeadComesWithItsBodyAndEnd() async throws {
        var machine = TransferStateMachine(highWatermark: 1 << 20, deliverThreshold: 1000)
        let head = try await waitingForHead(&machine) { machine in
            #expect(machine.headArrived(answer(length: 600), now: .now) == nil, "held back for its body")
            #expect(!machine.isHeadPending)
            guard case .buffered = receive(&machine, 600) else { Issue.record("bytes buffered"); return nil }
            let end = machine.finished(nil)
            #expect(end.resumeConsumer == nil && end.failHead == nil)
            return end.deliverHead
        }
        #expect(head?.status == 200)
        guard case .bytes(let batch, false) = machine.next() else { Issue.record("the body, without waiting"); return }
        #expect(batch.count == 600)
        guard case .end = machine.next() else { Issue.record("then the end"); return }
    }

    /// A small answer whose body is slow: the head goes to its waiter after `maxDelay`, as bytes do.
    @Test func aHeldHeadGoesToItsWaiterAfterTheDelay() async throws {
        var machine = TransferStateMachine(highWatermark: 1 << 20, deliverThreshold: 1000, maxDelay: .milliseconds(40))
        let start = TransferInstant.now
        let head = try await waitingForHead(&machine) { machine in
            #expect(machine.headArrived(answer(length: 600), now: start) == nil)
            _ = receive(&machine, 10, at: start)
            let early = machine.flushIfDue(now: start.advanced(by: .milliseconds(39)))
            #expect(early.head == nil && early.pending, "held, and the driver is to look again soon")
            let due = machine.flushIfDue(now: start.advanced(by: .milliseconds(40)))
            #expect(!due.pending)
            return due.head
        }
        #expect(head?.contentLength == 600)
        guard case .wait = machine.next() else { Issue.record("10 bytes are no batch yet"); return }
    }

    /// More bytes than the head announced, up to a batch: the head goes at once.
    @Test func aHeldHeadGoesWhenABatchIsThere() async throws {
        var machine = TransferStateMachine(highWatermark: 1 << 20, deliverThreshold: 1000)
        let head = try await waitingForHead(&machine) { machine in
            #expect(machine.headArrived(answer(length: 10), now: .now) == nil)
            guard case .deliverHead(let waiter, let head) = receive(&machine, 1000) else {
                Issue.record("a batch releases the head")
                return nil
            }
            return (waiter, head)
        }
        #expect(head != nil)
        guard case .bytes(let batch, _) = machine.next() else { Issue.record("the batch"); return }
        #expect(batch.count == 1000)
    }

    /// A large or unannounced body: the head goes to its waiter as soon as it is known.
    @Test(arguments: [1001, nil] as [Int?])
    func aLargeOrUnknownBodysHeadIsNotHeld(length: Int?) async throws {
        var machine = TransferStateMachine(highWatermark: 1 << 20, deliverThreshold: 1000)
        let value = length.map(answer(length:))
            ?? ResponseHead(status: 200, headers: [(name: "Transfer-Encoding", value: "chunked")], effectiveURL: "http://h/f")
        let head = try await waitingForHead(&machine) { machine in
            machine.headArrived(value, now: .now).map { ($0, value) }
        }
        #expect(head?.status == 200)
    }

    /// Cancelled while the head is held: its waiter fails with `CancellationError`.
    @Test func cancellingWhileTheHeadIsHeldFailsItsWaiter() async throws {
        var machine = TransferStateMachine(highWatermark: 1 << 20, deliverThreshold: 1000)
        await #expect(throws: CancellationError.self) {
            _ = try await waitingForHead(&machine) { machine in
                _ = machine.headArrived(answer(length: 10), now: .now)
                let action = machine.cancel()
                #expect(action.removeHandle)
                #expect(action.head != nil, "the waiter is handed back to fail (the helper fails it)")
                return nil
            }
        }
    }
}
