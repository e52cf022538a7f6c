import CCurl
import NIOConcurrencyHelpers

/// One transfer's shared state: written by the curl thread's callbacks, read by the consuming task.
///
/// The easy handle and the header list belong to the curl thread (`CurlDriver`); every other field is
/// behind the mutex. Callbacks get this object as an unretained pointer; the driver keeps it alive
/// until the handle is removed.
final class TransferCore: Sendable {
    let request: HTTPRequest
    private let driver: CurlDriver
    private let state: NIOLockedValueBox<State>

    private struct State {
        var machine: TransferStateMachine
        var headBuilder = ResponseHead.Builder()
        var closedAt: ContinuousClock.Instant?
        var closeWaiters: [CheckedContinuation<Void, Never>] = []
        var pauseWaiters: [(after: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    /// Set by the driver thread only.
    nonisolated(unsafe) var easy: UnsafeMutableRawPointer?
    nonisolated(unsafe) var headerList: UnsafeMutablePointer<curl_slist>?
    nonisolated(unsafe) var errorBuffer: UnsafeMutablePointer<CChar>?
    /// The clock the stall check measures quiet time on.
    let activityClock: ActivityClock
    /// When bytes (head or body) last arrived, or the consumer last let the transfer go on.
    nonisolated(unsafe) var lastActivity: Duration
    /// Paused because the consumer is behind: not the network's fault, so not a stall.
    nonisolated(unsafe) var pausedForConsumer = false
    /// The stall check aborted the transfer.
    nonisolated(unsafe) var stalled = false
    /// The head has been handed over (or failed); saves a lock per chunk on the curl thread.
    nonisolated(unsafe) var headSeen = false

    /// The download's live cap, shared with its other transfers.
    let limit: ReceiveLimit?
    /// The receive cap last given to curl (0: none); driver thread only.
    nonisolated(unsafe) var appliedRate: Int64 = 0

    init(request: HTTPRequest, driver: CurlDriver, highWatermark: Int, activityClock: ActivityClock,
         limit: ReceiveLimit? = nil) {
        self.request = request
        self.limit = limit
        self.driver = driver
        self.activityClock = activityClock
        self.lastActivity = activityClock.time(at: .now)
        self.state = NIOLockedValueBox(State(machine: TransferStateMachine(highWatermark: highWatermark)))
    }

    var statistics: TransferStatistics {
        state.withLockedValue {
            TransferStatistics(pauses: $0.machine.pauseCount, buffersAllocated: $0.machine.buffersAllocated,
                               peakBufferedBytes: $0.machine.peakBuffered, closedAt: $0.closedAt)
        }
    }

    // MARK: curl thread

    /// Something happened that is not a stall: bytes arrived, or the consumer let the transfer go on.
    func noteActivity(at now: ContinuousClock.Instant = .now) {
        lastActivity = activityClock.time(at: now)
    }

    func headerLine(_ line: UnsafeRawBufferPointer) {
        noteActivity()
        state.withLockedValue { $0.headBuilder.add(line: line) }
    }

    /// Called on the curl thread at least once a second; true aborts a transfer that received nothing
    /// for longer than its stall timeout.
    func isStalled() -> Bool {
        let limit = request.options.stallTimeout
        // `!(limit > 0)`: 0 means never, and so does a NaN that got this far.
        let now = activityClock.time(at: .now)
        if pausedForConsumer || !(limit > 0) {
            lastActivity = now
            return false
        }
        stalled = now - lastActivity > .milliseconds(TransferOptions.milliseconds(limit))
        return stalled
    }

    /// Called on the curl thread by the write callback; the return value goes back to curl.
    func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
        let now = ContinuousClock.now
        noteActivity(at: now)
        deliverHeadIfPending()
        let (action, paused) = state.withLockedValue { state in
            let action = state.machine.receive(bytes, now: now)
            guard case .pause = action, !state.pauseWaiters.isEmpty else {
                return (action, [CheckedContinuation<Void, Never>]())
            }
            let count = state.machine.pauseCount
            let due = state.pauseWaiters.filter { $0.after < count }.map(\.continuation)
            state.pauseWaiters.removeAll { $0.after < count }
            return (action, due)
        }
        for waiter in paused { waiter.resume() }
        switch action {
        case .deliver(let consumer, let batch):
            consumer.resume(returning: batch)
            return bytes.count
        case .buffered:
            return bytes.count
        case .pause:
            pausedForConsumer = true
            return Int(haul_writefunc_pause())
        case .abort:
            return 0
        }
    }

    /// Called on the curl thread between socket events: hands a waiting consumer the bytes that waited
    /// long enough. Returns whether bytes still wait for a later call.
    func flushIfDue(now: ContinuousClock.Instant) -> Bool {
        let (due, pending) = state.withLockedValue { $0.machine.flushIfDue(now: now) }
        if let (consumer, batch) = due { consumer.resume(returning: batch) }
        return pending
    }

    /// The transfer ended on the curl thread, with `nil` for success.
    func finish(_ error: HaulError?) {
        if error == nil { deliverHeadIfPending() }
        let (head, action, paused) = state.withLockedValue { state in
            let (head, action) = state.machine.finished(error)
            defer { state.pauseWaiters = [] }
            return (head, action, state.pauseWaiters.map(\.continuation))
        }
        for waiter in paused { waiter.resume() }
        if let (waiter, result) = head { waiter.resume(with: result) }
        if case .resumeConsumer(let consumer, let result) = action { consumer.resume(with: result) }
    }

    /// The driver removed and freed the handle.
    func markClosed() {
        let waiters = state.withLockedValue { state in
            state.closedAt = .now
            defer { state.closeWaiters = [] }
            return state.closeWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func deliverHeadIfPending() {
        guard !headSeen, let easy else { return }
        headSeen = true
        guard state.withLockedValue({ $0.machine.isHeadPending }) else { return }
        var status = 0
        haul_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        var urlPointer: UnsafeMutablePointer<CChar>?
        haul_easy_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &urlPointer)
        let effectiveURL = urlPointer.map { String(cString: $0) } ?? request.url
        let waiter = state.withLockedValue { state in
            let head = ResponseHead(status: status, headers: state.headBuilder.lines, effectiveURL: effectiveURL)
            state.machine.bodyStarts(at: head.status == 206 ? head.contentRange?.first ?? 0 : 0)
            return state.machine.headArrived(head)
        }
        if let waiter, case .delivered(let head) = state.withLockedValue({ $0.machine.head }) {
            waiter.resume(returning: head)
        }
    }

    // MARK: consumer

    func head() async throws -> ResponseHead {
        defer { acquireHandOff() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: TransferStateMachine.HeadContinuation) in
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
        let (consumer, head, remove, paused) = state.withLockedValue { state in
            let (consumer, head, remove) = state.machine.cancel()
            defer { state.pauseWaiters = [] }
            return (consumer, head, remove, state.pauseWaiters.map(\.continuation))
        }
        for waiter in paused { waiter.resume() }
        consumer?.resume(throwing: CancellationError())
        head?.resume(throwing: CancellationError())
        if remove { driver.post(.remove(self)) }
    }

    /// Returns once the transfer has been paused more than `count` times (for tests of backpressure).
    func waitUntilPaused(moreThan count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLockedValue { state -> Bool in
                if state.machine.pauseCount > count || !state.machine.isRunning { return true }
                state.pauseWaiters.append((count, continuation))
                return false
            }
            if done { continuation.resume() }
        }
    }

    func waitUntilClosed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLockedValue { state -> Bool in
                if state.closedAt != nil { return true }
                state.closeWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}

/// The time a transfer's stall check reads: a duration since the transfer began, on the clock of the download
/// it serves. On the continuous clock it is the reading the curl thread takes for each chunk anyway, so the
/// chunk path reads the time once, as before; another clock (a test's manual one) is read besides.
struct ActivityClock: Sendable {
    private let origin: ContinuousClock.Instant
    /// The time on another clock; nil for the continuous one.
    private let elapsed: (@Sendable () -> Duration)?

    init<C: Clock<Duration>>(_ clock: C) {
        origin = .now
        if clock is ContinuousClock {
            elapsed = nil
        } else {
            let start = clock.now
            elapsed = { start.duration(to: clock.now) }
        }
    }

    /// The time when the continuous clock reads `now`.
    func time(at now: ContinuousClock.Instant) -> Duration {
        elapsed?() ?? origin.duration(to: now)
    }
}

/// Counters a test or a benchmark can read about a transfer.
package struct TransferStatistics: Sendable, Equatable {
    /// How many times the curl thread paused the transfer because the consumer was behind.
    package var pauses: Int
    /// Transfer buffers allocated (they are reused, so a long download needs two).
    package var buffersAllocated: Int
    /// The most bytes ever waiting between curl and the consumer.
    package var peakBufferedBytes: Int
    /// When the handle was removed from the multi handle and freed, on the curl thread.
    package var closedAt: ContinuousClock.Instant?

    /// The handle has been removed from the multi handle and freed.
    package var closed: Bool { closedAt != nil }
}
