/// The hand-off between the curl thread (producer) and the task reading a transfer's bytes (consumer).
///
/// Plain state: every method says what the caller must do next, as an action, and the caller does it
/// outside the lock. The state is one enum whose cases carry their data, so a field that means nothing
/// in a state (a parked consumer after the end, a buffer after a cancel) cannot be there.
/// Invariants:
/// - The bytes wait in one `IOBuffer`, which never holds more than `highWatermark` plus one write-callback
///   chunk: at the high watermark the producer is told to pause (curl keeps that chunk and delivers it
///   again after `CURLPAUSE_CONT`).
/// - The consumer takes the whole buffer at once, so once it has taken, the level is zero and a paused
///   producer is resumed. Buffers come back (`recycle`) and are reused: no allocation per batch.
/// - Batches are worth a thread hand-off: a waiting consumer is woken when `deliverThreshold` bytes are
///   there (half the high watermark), or when the oldest waited `maxDelay` (the driver calls `flushIfDue`
///   for a quiet transfer).
/// - Once finished or cancelled, nothing is delivered but what is already buffered.
/// - A head that announces a body of at most `deliverThreshold` bytes is held back from its waiter until
///   the body has come (the end), the threshold is reached anyway, or it waited `maxDelay`: the consumer
///   of a small file then wakes once, for the head, the bytes and the end together, instead of once for the
///   head and again for the rest.
struct TransferStateMachine {
    typealias BytesContinuation = CheckedContinuation<ByteBatch?, any Error>
    typealias HeadContinuation = CheckedContinuation<ResponseHead, any Error>
    /// The parked waiters, boxed: every type stored here has a fixed layout (see `TransferInstant`).
    typealias BytesWaiter = TransferWaiter<ByteBatch?>
    typealias HeadWaiter = TransferWaiter<ResponseHead>
    typealias Instant = TransferInstant

    enum HeadState {
        case pending(HeadWaiter?)
        /// Known, and held back from its waiter while the small body it announces may still come with it.
        case held(ResponseHead, HeadWaiter?, since: Instant)
        case delivered(ResponseHead)
        case failed(any Error)
    }

    /// A head and the consumer waiting for it, to resume outside the lock.
    typealias HeadDelivery = (HeadWaiter, ResponseHead)

    /// Returned buffers kept for reuse.
    static let sparesKept = 2

    /// curl is delivering bytes.
    private struct Running {
        var head = HeadState.pending(nil)
        /// The bytes waiting for the consumer.
        var current: IOBuffer?
        var spares: [IOBuffer] = []
        /// The file offset the next byte is meant for, so buffers line up with the file's pages.
        var nextOffset: Int64 = 0
        var consumer: BytesWaiter?
        /// When the bytes now waiting for a parked consumer began to wait (or it parked, if later).
        var waitingSince: Instant?
        var producerPaused = false
    }

    private enum State {
        case running(Running)
        /// curl is done (`error` nil for success); `leftover` goes to the consumer before the end.
        case finished(error: HaulError?, leftover: IOBuffer?, head: HeadState)
        /// The consumer gave up; the head, if it never came, failed with `CancellationError`.
        case cancelled(head: HeadState)
        /// Only while a method changes `.running` in place, so that its buffers stay uniquely referenced.
        case modifying
    }

    let highWatermark: Int
    let deliverThreshold: Int
    let maxDelay: Duration
    /// The most bytes one write callback brings (curl's buffer size, `IOBuffer.largestChunk(for:)`).
    let largestChunk: Int
    private var state = State.running(Running())
    // Counters for tests and benchmarks, kept across states.
    private(set) var pauseCount = 0
    private(set) var peakBuffered = 0
    private(set) var buffersAllocated = 0

    init(highWatermark: Int, deliverThreshold: Int? = nil, maxDelay: Duration = .milliseconds(10),
         largestChunk: Int = IOBuffer.largestChunk) {
        self.highWatermark = highWatermark
        self.largestChunk = largestChunk
        self.deliverThreshold = deliverThreshold ?? Swift.max(1, highWatermark / 2)
        self.maxDelay = maxDelay
    }

    var head: HeadState {
        switch state {
        case .running(let running): running.head
        case .finished(_, _, let head), .cancelled(let head): head
        case .modifying: preconditionFailure("state read while being modified")
        }
    }

    var isHeadPending: Bool {
        if case .pending = head { return true }
        return false
    }

    var isRunning: Bool {
        if case .running = state { return true }
        return false
    }

    var producerPaused: Bool {
        if case .running(let running) = state { return running.producerPaused }
        return false
    }

    var buffered: Int {
        switch state {
        case .running(let running): running.current?.count ?? 0
        case .finished(_, let leftover, _): leftover?.count ?? 0
        case .cancelled, .modifying: 0
        }
    }

    private var bufferCapacity: Int { highWatermark + largestChunk + IOBuffer.alignment }

    /// Runs `body` on the running state, changed in place (nil when not running).
    private mutating func withRunning<R>(_ body: (inout Running) -> R) -> R? {
        guard case .running = state else { return nil }
        // Moved out, not copied: binding the payload straight from `state` copied it (a retain of every
        // buffer, waiter and head in it, and a release of each when `.modifying` replaced it), 28 times a
        // small file, on the curl thread.
        var taken = State.modifying
        swap(&taken, &state)
        guard case .running(var running) = consume taken else { preconditionFailure("not running") }
        defer { state = .running(running) }
        return body(&running)
    }

    // MARK: producer (curl thread)

    enum ReceiveAction {
        /// Bytes taken; resume this waiting consumer with this batch.
        case deliver(BytesWaiter, ByteBatch)
        /// Bytes taken into the buffer.
        case buffered
        /// Answer `CURL_WRITEFUNC_PAUSE`: the consumer is behind.
        case pause
        /// Answer a short count: the transfer was cancelled.
        case abort
        /// Bytes taken into the buffer, which now holds a batch: resume the consumer waiting for the head that
        /// was held back.
        case deliverHead(HeadWaiter, ResponseHead)
    }

    /// The body's first byte is meant for `offset` in the file (the start of a 206's range, else 0).
    mutating func bodyStarts(at offset: Int64) {
        withRunning { running in
            if running.current?.isEmpty ?? true { running.nextOffset = offset }
        }
    }

    mutating func receive(_ bytes: UnsafeRawBufferPointer, now: Instant) -> ReceiveAction {
        let capacity = bufferCapacity
        let highWatermark = highWatermark
        let due = dueRule
        var allocated = 0
        let (action, paused, peak) = withRunning { running -> (ReceiveAction, Bool, Int) in
            if (running.current?.count ?? 0) >= highWatermark {
                running.producerPaused = true
                return (.pause, true, 0)
            }
            var buffer: IOBuffer
            if let current = running.current {
                buffer = current
            } else {
                buffer = Self.freshBuffer(from: &running.spares, capacity: capacity, allocated: &allocated)
                buffer.reset(atFileOffset: running.nextOffset)
                running.current = buffer
            }
            if bytes.count > buffer.room {
                guard buffer.isEmpty else {
                    running.producerPaused = true
                    return (.pause, true, 0)
                }
                // A chunk larger than curl's buffer size (curl may hand over more after a pause): a buffer of
                // its own, used once.
                running.spares.append(buffer)
                allocated += 1
                buffer = IOBuffer(capacity: bytes.count + IOBuffer.alignment)
                buffer.reset(atFileOffset: running.nextOffset)
                running.current = buffer
            }
            buffer.append(bytes)
            running.nextOffset += Int64(bytes.count)
            if running.consumer != nil, running.waitingSince == nil { running.waitingSince = now }
            // The count first: binding the held head copies it, and a small body's chunks stay below.
            if buffer.count >= due.threshold, case .held(let head, let waiter, _) = running.head {
                // More came than the head announced: a batch's worth is reason enough to wake the consumer.
                running.head = .delivered(head)
                return (waiter.map { ReceiveAction.deliverHead($0, head) } ?? .buffered, false, buffer.count)
            }
            let action = Self.deliverIfDue(&running, now: now, when: due).map { ReceiveAction.deliver($0.0, $0.1) } ?? .buffered
            return (action, false, buffer.count)
        } ?? (.abort, false, 0)
        buffersAllocated += allocated
        if paused { pauseCount += 1 }
        peakBuffered = Swift.max(peakBuffered, peak)
        return action
    }

    /// What a flush hands over: a held head that waited long enough, bytes that did, and whether a later
    /// call may have something to deliver (so the driver knows to call again soon).
    struct FlushAction {
        var head: HeadDelivery?
        var deliver: (BytesWaiter, ByteBatch)?
        var pending = false
    }

    /// For a quiet transfer: hands its waiter a head held `maxDelay`, and a parked consumer what waited
    /// `maxDelay`.
    mutating func flushIfDue(now: Instant) -> FlushAction {
        let rule = dueRule
        return withRunning { running in
            var action = FlushAction()
            if case .held(let head, let waiter, let since) = running.head {
                guard since.duration(to: now) >= rule.maxDelay else {
                    action.pending = true
                    return action
                }
                running.head = .delivered(head)
                action.head = waiter.map { ($0, head) }
            }
            action.deliver = Self.deliverIfDue(&running, now: now, when: rule)
            action.pending = action.deliver == nil && running.consumer != nil && (running.current?.count ?? 0) > 0
            return action
        } ?? FlushAction()
    }

    /// When waiting bytes are worth waking the consumer for.
    private struct DueRule {
        let threshold: Int
        let maxDelay: Duration
    }

    private var dueRule: DueRule { DueRule(threshold: deliverThreshold, maxDelay: maxDelay) }

    private static func deliverIfDue(_ running: inout Running, now: Instant, when rule: DueRule)
        -> (BytesWaiter, ByteBatch)?
    {
        guard let waiting = running.consumer, let buffer = running.current, !buffer.isEmpty else { return nil }
        let waited = running.waitingSince.map { $0.duration(to: now) >= rule.maxDelay } ?? false
        guard buffer.count >= rule.threshold || waited else { return nil }
        running.consumer = nil
        running.waitingSince = nil
        running.current = nil
        return (waiting, ByteBatch(buffer))
    }

    private static func freshBuffer(from spares: inout [IOBuffer], capacity: Int, allocated: inout Int) -> IOBuffer {
        for index in spares.indices.reversed() where isKnownUniquelyReferenced(&spares[index]) {
            return spares.remove(at: index)
        }
        allocated += 1
        return IOBuffer(capacity: capacity)
    }

    /// The response head is known (first body byte, or end of a bodiless answer). Returns its waiter, unless
    /// the head announces a small body and is held back for it.
    mutating func headArrived(_ value: ResponseHead, now: Instant) -> HeadWaiter? {
        let threshold = deliverThreshold
        return withRunning { running in
            guard case .pending(let waiter) = running.head else { return nil }
            if let length = value.contentLength, length <= threshold {
                running.head = .held(value, waiter, since: now)
                return nil
            }
            running.head = .delivered(value)
            return waiter
        } ?? nil
    }

    /// What the curl thread does once a transfer ended.
    struct FinishAction {
        /// A waiter for the head, failed because none came.
        var failHead: (HeadWaiter, any Error)?
        /// A waiter for a head that was held back for its body.
        var deliverHead: HeadDelivery?
        /// The parked consumer, with the last bytes or the end.
        var resumeConsumer: (BytesWaiter, Result<ByteBatch?, any Error>)?
    }

    /// curl is done with the transfer, successfully (`error == nil`) or not.
    mutating func finished(_ error: HaulError?) -> FinishAction {
        guard case .running(var running) = state else { return FinishAction() }
        var action = FinishAction()
        if case .held(let head, let waiter, _) = running.head {
            running.head = .delivered(head)
            action.deliverHead = waiter.map { ($0, head) }
        }
        if case .pending(let waiter) = running.head {
            let failure: any Error = error ?? HaulError(.protocol, "the server sent no response")
            running.head = .failed(failure)
            if let waiter { action.failHead = (waiter, failure) }
        }
        if let waiting = running.consumer {
            if let buffer = running.current, !buffer.isEmpty {
                // What waited below the threshold goes first; the end comes with the next call.
                running.current = nil
                action.resumeConsumer = (waiting, .success(ByteBatch(buffer)))
            } else {
                action.resumeConsumer = (waiting, error.map { .failure($0) } ?? .success(nil))
            }
        }
        let leftover = running.current.flatMap { $0.isEmpty ? nil : $0 }
        state = .finished(error: error, leftover: leftover, head: running.head)
        return action
    }

    /// curl has ended the transfer without an error: every byte of the body is here.
    var hasEndedWell: Bool {
        if case .finished(nil, _, _) = state { return true }
        return false
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
        switch state {
        case .running:
            let threshold = deliverThreshold
            return withRunning { running -> NextAction in
                guard let buffer = running.current, !buffer.isEmpty,
                    buffer.count >= threshold || running.producerPaused
                else { return .wait }
                running.current = nil
                let resume = running.producerPaused
                running.producerPaused = false
                return .bytes(ByteBatch(buffer), resumeProducer: resume)
            } ?? .wait
        case .finished(let error, let leftover?, let head):
            state = .finished(error: error, leftover: nil, head: head)
            return .bytes(ByteBatch(leftover), resumeProducer: false)
        case .finished(nil, nil, _): return .end
        case .finished(let error?, nil, _): return .fail(error)
        case .cancelled: return .fail(CancellationError())
        case .modifying: preconditionFailure("state read while being modified")
        }
    }

    /// The buffer of the consumer's previous batch. It is reused only once nothing else refers to it:
    /// the consumer may keep a batch, and the curl thread may not yet have dropped its own reference.
    mutating func recycle(_ buffer: IOBuffer) {
        guard buffer.capacity == bufferCapacity else { return }
        withRunning { running in
            if running.spares.count >= Self.sparesKept { running.spares.removeFirst() }
            running.spares.append(buffer)
        }
    }

    /// Parks the consumer; only valid right after `next()` answered `.wait` under the same lock.
    mutating func park(_ continuation: BytesContinuation, now: Instant) {
        let parked: Void? = withRunning { running in
            precondition(running.consumer == nil, "one consumer at a time")
            running.consumer = BytesWaiter(continuation)
            running.waitingSince = (running.current?.count ?? 0) > 0 ? now : nil
        }
        precondition(parked != nil, "parked after the end")
    }

    mutating func parkForHead(_ continuation: HeadContinuation) -> Result<ResponseHead, any Error>? {
        switch head {
        case .delivered(let value): return .success(value)
        case .failed(let error): return .failure(error)
        case .pending(.some), .held(_, .some, _):
            return .failure(HaulError(.other, "the response head is already awaited"))
        case .pending(nil):
            withRunning { $0.head = .pending(HeadWaiter(continuation)) }
            return nil
        case .held(let value, nil, let since):
            withRunning { $0.head = .held(value, HeadWaiter(continuation), since: since) }
            return nil
        }
    }

    /// What the consumer's side does once it gave up.
    struct CancelAction {
        /// Waiters to fail with `CancellationError`.
        var consumer: BytesWaiter?
        var head: HeadWaiter?
        /// The transfer was still running: the curl thread must drop the handle.
        var removeHandle = false
    }

    /// The consumer gave up.
    mutating func cancel() -> CancelAction {
        switch state {
        case .running(let running):
            var action = CancelAction(consumer: running.consumer, removeHandle: true)
            switch running.head {
            case .pending(let waiter), .held(_, let waiter, _): action.head = waiter
            case .delivered, .failed: break
            }
            let head: HeadState = switch running.head {
            case .pending, .held: .failed(CancellationError())
            case .delivered, .failed: running.head
            }
            state = .cancelled(head: head)
            return action
        case .finished(_, _, let head), .cancelled(let head):
            state = .cancelled(head: head)
            return CancelAction()
        case .modifying: preconditionFailure("state read while being modified")
        }
    }
}
