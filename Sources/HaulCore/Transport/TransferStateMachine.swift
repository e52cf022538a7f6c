/// The hand-off between the curl thread (producer) and the task reading a transfer's bytes (consumer).
///
/// Plain state: every method says what the caller must do next, and the caller does it outside the lock.
/// Invariants:
/// - `buffer` never grows past `highWatermark` plus one write-callback chunk: at the high watermark the
///   producer is told to pause (curl keeps that chunk and delivers it again after `CURLPAUSE_CONT`).
/// - The consumer takes the whole buffer at once, so once it has taken, the level is below the low
///   watermark and a paused producer is resumed.
/// - Once finished or cancelled, nothing is delivered but what is already buffered.
struct TransferStateMachine {
    typealias BytesContinuation = CheckedContinuation<[UInt8]?, any Error>
    typealias HeadContinuation = CheckedContinuation<ResponseHead, any Error>

    enum Phase {
        case running
        case finished(HaulError?)
        case cancelled
    }

    enum HeadState {
        case pending(HeadContinuation?)
        case delivered(ResponseHead)
        case failed(any Error)
    }

    let highWatermark: Int
    private(set) var phase = Phase.running
    private(set) var head = HeadState.pending(nil)
    private var buffer: [UInt8] = []
    private var consumer: BytesContinuation?
    private(set) var producerPaused = false
    private(set) var pauseCount = 0
    private(set) var peakBuffered = 0

    init(highWatermark: Int) {
        self.highWatermark = highWatermark
    }

    var isHeadPending: Bool {
        if case .pending = head { return true }
        return false
    }

    var isRunning: Bool {
        if case .running = phase { return true }
        return false
    }

    // MARK: producer (curl thread)

    enum ReceiveAction {
        /// Bytes taken; resume this waiting consumer with this batch.
        case deliver(BytesContinuation, [UInt8])
        /// Bytes taken into the buffer.
        case buffered
        /// Answer `CURL_WRITEFUNC_PAUSE`: the consumer is behind.
        case pause
        /// Answer a short count: the transfer was cancelled.
        case abort
    }

    mutating func receive(_ bytes: UnsafeRawBufferPointer) -> ReceiveAction {
        guard isRunning else { return .abort }
        if buffer.count >= highWatermark {
            producerPaused = true
            pauseCount += 1
            return .pause
        }
        if let waiting = consumer {
            consumer = nil
            return .deliver(waiting, Array(bytes))
        }
        buffer.append(contentsOf: bytes)
        peakBuffered = max(peakBuffered, buffer.count)
        return .buffered
    }

    /// The response head is known (first body byte, or end of a bodiless answer).
    mutating func headArrived(_ value: ResponseHead) -> HeadContinuation? {
        guard case .pending(let waiter) = head else { return nil }
        head = .delivered(value)
        return waiter
    }

    enum FinishAction {
        case none
        case resumeConsumer(BytesContinuation, Result<[UInt8]?, any Error>)
    }

    /// curl is done with the transfer, successfully (`error == nil`) or not.
    mutating func finished(_ error: HaulError?) -> (head: (HeadContinuation, Result<ResponseHead, any Error>)?, FinishAction) {
        guard isRunning else { return (nil, .none) }
        phase = .finished(error)
        var headAction: (HeadContinuation, Result<ResponseHead, any Error>)?
        if case .pending(let waiter) = head {
            let failure: any Error = error ?? HaulError(.protocol, "the server sent no response")
            head = .failed(failure)
            if let waiter { headAction = (waiter, .failure(failure)) }
        }
        guard let waiting = consumer else { return (headAction, .none) }
        consumer = nil
        return (headAction, .resumeConsumer(waiting, error.map { .failure($0) } ?? .success(nil)))
    }

    // MARK: consumer (any task)

    enum NextAction {
        /// Return these bytes; when `resumeProducer` is set, post an unpause to the curl thread.
        case bytes([UInt8], resumeProducer: Bool)
        case end
        case fail(any Error)
        case wait
    }

    mutating func next() -> NextAction {
        if !buffer.isEmpty {
            var taken: [UInt8] = []
            swap(&taken, &buffer)
            let resume = producerPaused && isRunning
            if resume { producerPaused = false }
            return .bytes(taken, resumeProducer: resume)
        }
        switch phase {
        case .running: return .wait
        case .finished(nil): return .end
        case .finished(let error?): return .fail(error)
        case .cancelled: return .fail(CancellationError())
        }
    }

    /// Parks the consumer; only valid right after `next()` answered `.wait` under the same lock.
    mutating func park(_ continuation: BytesContinuation) {
        precondition(isRunning && buffer.isEmpty && consumer == nil, "one consumer at a time")
        consumer = continuation
    }

    mutating func parkForHead(_ continuation: HeadContinuation) -> Result<ResponseHead, any Error>? {
        switch head {
        case .delivered(let value): return .success(value)
        case .failed(let error): return .failure(error)
        case .pending(nil):
            if case .cancelled = phase { return .failure(CancellationError()) }
            head = .pending(continuation)
            return nil
        case .pending(.some):
            return .failure(HaulError(.other, "the response head is already awaited"))
        }
    }

    /// The consumer gave up. Returns the waiters to fail, and whether the curl thread must drop the handle.
    mutating func cancel() -> (consumer: BytesContinuation?, head: HeadContinuation?, removeHandle: Bool) {
        let wasRunning = isRunning
        if wasRunning { phase = .cancelled }
        let waitingConsumer = consumer
        consumer = nil
        var waitingHead: HeadContinuation?
        if case .pending(let waiter) = head {
            waitingHead = waiter
            head = .failed(CancellationError())
        }
        return (waitingConsumer, waitingHead, wasRunning)
    }
}
