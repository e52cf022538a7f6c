import TestSupport
import Testing
@testable import HaulCore

@Suite struct TransferStateMachineTests {
    func receive(_ machine: inout TransferStateMachine, _ count: Int) -> TransferStateMachine.ReceiveAction {
        let bytes = [UInt8](repeating: 1, count: count)
        return bytes.withUnsafeBytes { machine.receive($0) }
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
        let (head, _) = machine.finished(HaulError(.network, "refused"))
        #expect(head == nil)  // nobody was waiting
        guard case .failed(let error) = machine.head else { Issue.record("head should fail"); return }
        #expect((error as? HaulError)?.message == "refused")
    }
}
