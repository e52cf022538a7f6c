import NIOConcurrencyHelpers

/// One transfer's shared state: written by the curl thread, read by the consuming task.
///
/// Everything here is behind the mutex or immutable. What only the curl thread touches (the easy handle,
/// its header list and error buffer, the stall bookkeeping) lives in the driver's per-handle record
/// (`CurlHandle`, in `CurlHandle.swift`), which never leaves that thread.
final class TransferCore: Sendable {
    let request: HTTPRequest
    private let driver: CurlDriver
    private let state: NIOLockedValueBox<State>
    /// The clock the stall check measures quiet time on.
    let activityClock: ActivityClock
    /// The download's live cap, shared with its other transfers.
    let limit: ReceiveLimit?

    /// `Transfer.refitsToCap`: set by the reader, read on the curl thread when the cap changes.
    var refitsToCap: Bool {
        get { state.withLockedValue { $0.refitsToCap } }
        set { state.withLockedValue { $0.refitsToCap = newValue } }
    }

    private struct State {
        var machine: TransferStateMachine
        var headBuilder = ResponseHead.Builder()
        var closedAt: TransferInstant?
        var refitsToCap = false
    }

    /// Buffers and delivers as `driver` says (`highWatermark`, `deliveryDelay`).
    init(request: HTTPRequest, driver: CurlDriver, activityClock: ActivityClock, limit: ReceiveLimit? = nil) {
        self.request = request
        self.limit = limit
        self.driver = driver
        self.activityClock = activityClock
        let largestChunk = IOBuffer.largestChunk(for: request.remoteFileProtocol)
        self.state = NIOLockedValueBox(State(machine: TransferStateMachine(highWatermark: driver.highWatermark,
                                                                           maxDelay: driver.deliveryDelay,
                                                                           largestChunk: largestChunk)))
    }

    var statistics: TransferStatistics {
        state.withLockedValue {
            TransferStatistics(pauses: $0.machine.pauseCount, buffersAllocated: $0.machine.buffersAllocated,
                               peakBufferedBytes: $0.machine.peakBuffered, closedAt: $0.closedAt)
        }
    }

    // MARK: curl thread

    func headerLine(_ line: UnsafeRawBufferPointer) {
        state.withLockedValue { $0.headBuilder.add(line: line) }
    }

    var hasEndedWell: Bool {
        state.withLockedValue { $0.machine.hasEndedWell }
    }

    var isHeadPending: Bool {
        state.withLockedValue { $0.machine.isHeadPending }
    }

    /// The head is complete: the first body byte came, or the transfer ended without a body.
    func headArrived(status: Int, effectiveURL: String) {
        headArrived { ResponseHead(status: status, headers: $0.lines, effectiveURL: effectiveURL) }
    }

    /// The same for a head haul made (`ResponseHead.remoteFile`): FTP, SFTP and SCP send none.
    func headArrived(_ made: ResponseHead) {
        headArrived { _ in made }
    }

    private func headArrived(_ make: (ResponseHead.Builder) -> ResponseHead) {
        let now = TransferInstant.now
        let waiter = state.withLockedValue { state -> (TransferStateMachine.HeadWaiter, ResponseHead)? in
            let head = make(state.headBuilder)
            state.machine.bodyStarts(at: head.status == 206 ? head.contentRange?.first ?? 0 : 0)
            return state.machine.headArrived(head, now: now).map { ($0, head) }
        }
        if let (continuation, head) = waiter { continuation.resume(returning: head) }
    }

    /// Called by the write callback with a chunk of the body; says what to answer curl.
    func receive(_ bytes: UnsafeRawBufferPointer, now: TransferInstant) -> TransferStateMachine.ReceiveAction {
        let action = state.withLockedValue { $0.machine.receive(bytes, now: now) }
        switch action {
        case .deliver(let consumer, let batch): consumer.resume(returning: batch)
        case .deliverHead(let waiter, let head): waiter.resume(returning: head)
        case .buffered, .pause, .abort: break
        }
        return action
    }

    /// How many times the transfer has been paused for its consumer.
    var pauseCount: Int { state.withLockedValue { $0.machine.pauseCount } }

    /// Called on the curl thread between socket events: hands a waiting consumer the head or the bytes that
    /// waited long enough. Returns whether something still waits for a later call.
    func flushIfDue(now: TransferInstant) -> Bool {
        let action = state.withLockedValue { $0.machine.flushIfDue(now: now) }
        if let (waiter, head) = action.head { waiter.resume(returning: head) }
        if let (consumer, batch) = action.deliver { consumer.resume(returning: batch) }
        return action.pending
    }

    /// The transfer ended on the curl thread, with `nil` for success.
    func finish(_ error: HaulError?) {
        let action = state.withLockedValue { $0.machine.finished(error) }
        if let (waiter, head) = action.deliverHead { waiter.resume(returning: head) }
        if let (waiter, failure) = action.failHead { waiter.resume(throwing: failure) }
        if let (consumer, result) = action.resumeConsumer { consumer.resume(with: result) }
    }

    /// The driver removed and freed the handle.
    func markClosed() {
        state.withLockedValue { $0.closedAt = TransferInstant.now }
    }

    // MARK: consumer

    typealias HeadContinuation = TransferStateMachine.HeadContinuation

    func head() async throws -> ResponseHead {
        defer { acquireHandOff() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: HeadContinuation) in
                if let ready = state.withLockedValue({ $0.machine.parkForHead(continuation) }) {
                    continuation.resume(with: ready)
                }
            }
        } onCancel: {
            cancel()
        }
    }

    /// The next batch; `recycling` is the buffer of the previous one, for reuse once nobody holds it.
    func next(recycling spent: consuming IOBuffer?) async throws -> ByteBatch? {
        // Consumed before any waiting, so that no reference of ours keeps the buffer from being reused.
        if let ready = try take(firstLook(recycling: consume spent)) { return ready }
        defer { acquireHandOff() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: TransferStateMachine.BytesContinuation) in
                // Anything may have happened since the first look: look again under the same lock as parking.
                let action = state.withLockedValue { state -> TransferStateMachine.NextAction? in
                    let action = state.machine.next()
                    guard case .wait = action else { return action }
                    state.machine.park(continuation, now: .now)
                    return nil
                }
                guard let action else { return }
                continuation.resume(with: Result { try take(action) ?? nil })
            }
        } onCancel: {
            cancel()
        }
    }

    /// Takes the lock once after a continuation returned what the curl thread handed over. The curl thread
    /// filled the buffer (or built the head) under this lock and resumed us after releasing it, so this
    /// orders nothing that was not ordered already; but when the resume beats our suspension, the runtime
    /// lets us run on with only its own atomics between the threads, which ThreadSanitizer cannot see, and it
    /// reported the buffer's fields as a race (CI, `IOBuffer.bytes` against `IOBuffer.init`). An uncontended
    /// lock per batch of up to 256 KiB costs nothing measurable.
    private func acquireHandOff() {
        state.withLockedValue { _ in }
    }

    private func firstLook(recycling spent: consuming IOBuffer?) -> TransferStateMachine.NextAction {
        state.withLockedValue { state in
            if let spent { state.machine.recycle(spent) }
            return state.machine.next()
        }
    }

    /// Carries out a consumer action that needs no waiting: `.some(batch or nil)`, or `nil` for `.wait`.
    private func take(_ action: TransferStateMachine.NextAction) throws -> ByteBatch?? {
        switch action {
        case .bytes(let batch, let resumeProducer):
            if resumeProducer { driver.post(.unpause(self)) }
            return .some(batch)
        case .end: return .some(nil)
        case .fail(let error): throw error
        case .wait: return nil
        }
    }

    func cancel() {
        let action = state.withLockedValue { $0.machine.cancel() }
        action.consumer?.resume(throwing: CancellationError())
        action.head?.resume(throwing: CancellationError())
        if action.removeHandle { driver.post(.remove(self)) }
    }
}

/// The time a transfer's stall check reads: a duration since the transfer began, on the clock of the download
/// it serves. On the continuous clock it is the monotonic reading the curl thread takes for each chunk anyway,
/// so the chunk path reads the time once, as before; another clock (a test's manual one) is read besides.
struct ActivityClock: Sendable {
    private let origin: TransferInstant
    /// The time on another clock; nil for the continuous one.
    private let elapsed: (@Sendable () -> Duration)?

    init<C: Clock<Duration>>(_ clock: C) {
        origin = .now
        // Which clock it is, not a reading of it: on the continuous clock the time is the curl thread's own
        // `TransferInstant` reading, so that the chunk path reads the time once.
        if clock is ContinuousClock {
            elapsed = nil
        } else {
            let start = clock.now
            elapsed = { start.duration(to: clock.now) }
        }
    }

    /// The time when the monotonic clock reads `now`.
    func time(at now: TransferInstant) -> Duration {
        elapsed?() ?? origin.duration(to: now)
    }
}

/// Counters a test or a benchmark can read about a transfer.
struct TransferStatistics: Sendable, Equatable {
    /// How many times the curl thread paused the transfer because the consumer was behind.
    var pauses: Int
    /// Transfer buffers allocated (they are reused, so a long download needs two).
    var buffersAllocated: Int
    /// The most bytes ever waiting between curl and the consumer.
    var peakBufferedBytes: Int
    /// When the handle was removed from the multi handle and freed, on the curl thread.
    var closedAt: TransferInstant?

    /// The handle has been removed from the multi handle and freed.
    var closed: Bool { closedAt != nil }
}
