/// The hand-off between the curl thread (producer) and the task reading a transfer's bytes (consumer).
///
/// Plain state: every method says what the caller must do next, and the caller does it outside the lock.
/// Invariants:
/// - The bytes wait in one `IOBuffer`, which never holds more than `highWatermark` plus one write-callback
///   chunk: at the high watermark the producer is told to pause (curl keeps that chunk and delivers it
///   again after `CURLPAUSE_CONT`).
/// - The consumer takes the whole buffer at once, so once it has taken, the level is zero and a paused
///   producer is resumed. Buffers come back (`recycle`) and are reused: no allocation per batch.
/// - Batches are worth a thread hand-off: a waiting consumer is woken when `deliverThreshold` bytes are
///   there (half the high watermark), or when the oldest waited `maxDelay` (the driver calls `flushIfDue` for a quiet transfer).
/// - Once finished or cancelled, nothing is delivered but what is already buffered.
struct TransferStateMachine {
    typealias BytesContinuation = CheckedContinuation<ByteBatch?, any Error>
    typealias HeadContinuation = CheckedContinuation<ResponseHead, any Error>
    typealias Instant = ContinuousClock.Instant

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

    /// The most bytes one write callback brings (`CURLOPT_BUFFERSIZE`).
    static let largestChunk = 256 * 1024
    /// Returned buffers kept for reuse.
    static let sparesKept = 2

    let highWatermark: Int
    let deliverThreshold: Int
    let maxDelay: Duration
    private(set) var phase = Phase.running
    private(set) var head = HeadState.pending(nil)
    private var current: IOBuffer?
    private var spares: [IOBuffer] = []
    /// The file offset the next byte is meant for, so buffers line up with the file's pages.
    private var nextOffset: Int64 = 0
    private var consumer: BytesContinuation?
    /// When the bytes now waiting for a parked consumer began to wait (or it parked, if later).
    private var waitingSince: Instant?
    private(set) var producerPaused = false
    private(set) var pauseCount = 0
    private(set) var peakBuffered = 0
    private(set) var buffersAllocated = 0

    init(highWatermark: Int, deliverThreshold: Int? = nil, maxDelay: Duration = .milliseconds(40)) {
        self.highWatermark = highWatermark
        self.deliverThreshold = deliverThreshold ?? Swift.max(1, highWatermark / 2)
        self.maxDelay = maxDelay
    }

    var isHeadPending: Bool {
        if case .pending = head { return true }
        return false
    }

    var isRunning: Bool {
        if case .running = phase { return true }
        return false
    }

    var buffered: Int { current?.count ?? 0 }

    private var bufferCapacity: Int { highWatermark + Self.largestChunk + IOBuffer.alignment }

    // MARK: producer (curl thread)

    enum ReceiveAction {
        /// Bytes taken; resume this waiting consumer with this batch.
        case deliver(BytesContinuation, ByteBatch)
        /// Bytes taken into the buffer.
        case buffered
        /// Answer `CURL_WRITEFUNC_PAUSE`: the consumer is behind.
        case pause
        /// Answer a short count: the transfer was cancelled.
        case abort
    }

    /// The body's first byte is meant for `offset` in the file (the start of a 206's range, else 0).
    mutating func bodyStarts(at offset: Int64) {
        if current?.isEmpty ?? true { nextOffset = offset }
    }

    mutating func receive(_ bytes: UnsafeRawBufferPointer, now: Instant) -> ReceiveAction {
        guard isRunning else { return .abort }
        if buffered >= highWatermark {
            return pause()
        }
        var buffer: IOBuffer
        if let current {
            buffer = current
        } else {
            buffer = freshBuffer()
            buffer.reset(atFileOffset: nextOffset)
            current = buffer
        }
        if bytes.count > buffer.room {
            guard buffer.isEmpty else { return pause() }
            // A chunk larger than curl's buffer size (curl may hand over more after a pause): a buffer of
            // its own, used once.
            spares.append(buffer)
            buffersAllocated += 1
            buffer = IOBuffer(capacity: bytes.count + IOBuffer.alignment)
            buffer.reset(atFileOffset: nextOffset)
            current = buffer
        }
        buffer.append(bytes)
        nextOffset += Int64(bytes.count)
        peakBuffered = Swift.max(peakBuffered, buffer.count)
        if consumer != nil, waitingSince == nil { waitingSince = now }
        return deliverIfDue(now: now).map { .deliver($0.0, $0.1) } ?? .buffered
    }

    /// For a quiet transfer: hands a parked consumer what waited `maxDelay`. Also says whether a later
    /// call may have something to deliver (so the driver knows to call again soon).
    mutating func flushIfDue(now: Instant) -> (deliver: (BytesContinuation, ByteBatch)?, pending: Bool) {
        let due = deliverIfDue(now: now)
        return (due, due == nil && consumer != nil && buffered > 0)
    }

    private mutating func deliverIfDue(now: Instant) -> (BytesContinuation, ByteBatch)? {
        guard let waiting = consumer, let buffer = current, !buffer.isEmpty else { return nil }
        let waited = waitingSince.map { $0.duration(to: now) >= maxDelay } ?? false
        guard buffer.count >= deliverThreshold || waited else { return nil }
        consumer = nil
        waitingSince = nil
        current = nil
        return (waiting, ByteBatch(buffer))
    }

    private mutating func pause() -> ReceiveAction {
        producerPaused = true
        pauseCount += 1
        return .pause
    }

    private mutating func freshBuffer() -> IOBuffer {
        for index in spares.indices.reversed() where isKnownUniquelyReferenced(&spares[index]) {
            return spares.remove(at: index)
        }
        buffersAllocated += 1
        return IOBuffer(capacity: bufferCapacity)
    }

    /// The response head is known (first body byte, or end of a bodiless answer).
    mutating func headArrived(_ value: ResponseHead) -> HeadContinuation? {
        guard case .pending(let waiter) = head else { return nil }
        head = .delivered(value)
        return waiter
    }

    enum FinishAction {
        case none
        case resumeConsumer(BytesContinuation, Result<ByteBatch?, any Error>)
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
        waitingSince = nil
        if let buffer = current, !buffer.isEmpty {
            // What waited below the threshold goes first; the end comes with the next call.
            current = nil
            return (headAction, .resumeConsumer(waiting, .success(ByteBatch(buffer))))
        }
        return (headAction, .resumeConsumer(waiting, error.map { .failure($0) } ?? .success(nil)))
    }

    // MARK: consumer (any task)

    enum NextAction {
        /// Return these bytes; when `resumeProducer` is set, post an unpause to the curl thread.
        case bytes(ByteBatch, resumeProducer: Bool)
        case end
        case fail(any Error)
        case wait
    }

    /// What the consumer gets now. While the transfer runs, a batch smaller than `deliverThreshold` is
    /// left to grow (the consumer parks and is woken by `receive` or `flushIfDue`).
    mutating func next() -> NextAction {
        if let buffer = current, !buffer.isEmpty, buffer.count >= deliverThreshold || !isRunning || producerPaused {
            current = nil
            let resume = producerPaused && isRunning
            if resume { producerPaused = false }
            return .bytes(ByteBatch(buffer), resumeProducer: resume)
        }
        switch phase {
        case .running: return .wait
        case .finished(nil): return .end
        case .finished(let error?): return .fail(error)
        case .cancelled: return .fail(CancellationError())
        }
    }

    /// The buffer of the consumer's previous batch. It is reused only once nothing else refers to it:
    /// the consumer may keep a batch, and the curl thread may not yet have dropped its own reference.
    mutating func recycle(_ buffer: IOBuffer) {
        guard isRunning, buffer.capacity == bufferCapacity else { return }
        if spares.count >= Self.sparesKept { spares.removeFirst() }
        spares.append(buffer)
    }

    /// Parks the consumer; only valid right after `next()` answered `.wait` under the same lock.
    mutating func park(_ continuation: BytesContinuation, now: Instant) {
        precondition(isRunning && consumer == nil, "one consumer at a time")
        consumer = continuation
        waitingSince = buffered > 0 ? now : nil
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
        current = nil
        spares = []
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
