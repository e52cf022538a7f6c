import HaulCore
import HummingbirdWebSocket
import NIOCore
import NIOConcurrencyHelpers

/// One WebSocket session of the aria2 face: calls in, replies and notifications out, through one writer,
/// with a bound on what the session may hold for a client that does not read.
///
/// A reply waits until the writer has taken the one before it, and the next call is read only then: a
/// client that sends calls without reading the replies fills its own socket, not the service (the calls
/// wait in the kernel, the service reads no more of them). Notifications cannot wait: more than
/// `notificationLimit` of them unsent, or a write that makes no progress for `stallLimit`, and the session
/// is closed, and what it held goes with it.
enum RPCSession {
    static let notificationLimit = 1024
    static let stallLimit: Duration = .seconds(30)

    static func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, channel: any Channel,
                    face: Aria2Face, service: Service, peer: String) async throws {
        let notifications = await service.listenAria2()
        let outbox = SessionOutbox(notificationLimit: notificationLimit, clock: service.clock.moments)
        let failure = await withTaskGroup(of: (any Error)?.self) { tasks in
            tasks.addTask {
                for await notification in notifications where !outbox.notify(notification.text) {
                    // Too many unsent: a client that does not read.
                    channel.close(promise: nil)
                    break
                }
                return nil
            }
            tasks.addTask {
                do {
                    for try await message in inbound.messages(maxSize: RPCServer.maxBody) {
                        guard case .text(let text) = message else { continue }
                        let reply = await face.respond(body: Array(text.utf8), peer: peer).reply.text
                        guard await outbox.send(reply: reply) else { break }
                    }
                    outbox.finish(dropping: false)
                    return nil
                } catch {
                    // A frame that breaks the protocol (invalid UTF-8 in a text message, a message too large):
                    // the session closes with its code (1007, 1009). A client gone mid-call ends it too; the
                    // service goes on either way.
                    outbox.finish(dropping: true)
                    return error
                }
            }
            tasks.addTask {
                // The watchdog: a write that has not gone out for `stallLimit` closes the connection (a close
                // frame would wait behind it).
                if await outbox.stalls(longerThan: stallLimit) { channel.close(promise: nil) }
                return nil
            }
            while let text = await outbox.next() {
                do { try await outbound.writeTextMessage(text) } catch { break }
                outbox.wrote()
            }
            outbox.finish(dropping: true)
            tasks.cancelAll()
            var failure: (any Error)?
            for await error in tasks where error != nil { failure = error }
            return failure
        }
        if let failure { throw failure }
    }
}

/// What one session has to send, in order: at most one reply waiting (its sender waits until the writer
/// takes it) and at most `notificationLimit` notifications.
final class SessionOutbox: Sendable {
    private struct State {
        var queue: [(text: String, isReply: Bool)] = []
        var head = 0
        var notifications = 0
        var sender: CheckedContinuation<Bool, Never>?
        var writer: CheckedContinuation<String?, Never>?
        var finished = false
        /// When the write under way began.
        var writingSince: Moment?

        mutating func pop() -> (text: String, isReply: Bool)? {
            guard head < queue.count else { return nil }
            let item = queue[head]
            queue[head].text = ""
            head += 1
            if head == queue.count {
                queue.removeAll(keepingCapacity: queue.capacity <= 64)
                head = 0
            }
            if !item.isReply { notifications -= 1 }
            return item
        }
    }

    private let state = NIOLockedValueBox(State())
    let notificationLimit: Int
    /// The service's clock (a test's manual one): what a write is timed on, and the watchdog waits on.
    private let clock: MomentClock

    init(notificationLimit: Int, clock: MomentClock = .continuous) {
        self.notificationLimit = notificationLimit
        self.clock = clock
    }

    /// What a text queued met: the writer waiting for it, a place in the queue, or a session that ended
    /// (or, for a notification, a full queue).
    private enum Queued {
        case taken(CheckedContinuation<String?, Never>)
        case queued
        case refused
    }

    /// Queues a reply and returns once the writer has taken it: true, or false when the session ended.
    func send(reply text: String) async -> Bool {
        await withCheckedContinuation { (sender: CheckedContinuation<Bool, Never>) in
            let queued: Queued = state.withLockedValue { state in
                guard !state.finished else { return .refused }
                if let writer = state.writer {
                    state.writer = nil
                    state.writingSince = clock.now
                    return .taken(writer)
                }
                state.queue.append((text, true))
                state.sender = sender
                return .queued
            }
            switch queued {
            case .taken(let writer):
                writer.resume(returning: text)
                sender.resume(returning: true)
            case .queued: break
            case .refused: sender.resume(returning: false)
            }
        }
    }

    /// Queues a notification; false when `notificationLimit` of them are unsent already (or the session
    /// ended).
    func notify(_ text: String) -> Bool {
        let queued: Queued = state.withLockedValue { state in
            guard !state.finished, state.notifications < notificationLimit else { return .refused }
            if let writer = state.writer {
                state.writer = nil
                state.writingSince = clock.now
                return .taken(writer)
            }
            state.queue.append((text, false))
            state.notifications += 1
            return .queued
        }
        switch queued {
        case .taken(let writer):
            writer.resume(returning: text)
            return true
        case .queued: return true
        case .refused: return false
        }
    }

    /// The next text to write, in the order queued; nil once the session ended and nothing is left.
    func next() async -> String? {
        await withCheckedContinuation { (writer: CheckedContinuation<String?, Never>) in
            let (item, sender, ended): ((text: String, isReply: Bool)?, CheckedContinuation<Bool, Never>?, Bool) =
                state.withLockedValue { state in
                    if let item = state.pop() {
                        state.writingSince = clock.now
                        var sender: CheckedContinuation<Bool, Never>?
                        if item.isReply {
                            sender = state.sender
                            state.sender = nil
                        }
                        return (item, sender, false)
                    }
                    if state.finished { return (nil, nil, true) }
                    state.writer = writer
                    return (nil, nil, false)
                }
            sender?.resume(returning: true)
            if let item {
                writer.resume(returning: item.text)
            } else if ended {
                writer.resume(returning: nil)
            }
        }
    }

    /// How many texts wait to be taken.
    var queued: Int { state.withLockedValue { $0.queue.count - $0.head } }

    /// The write of the last text taken is done.
    func wrote() {
        state.withLockedValue { $0.writingSince = nil }
    }

    /// A write under way for longer than `limit`: the client does not read.
    func isStalled(longerThan limit: Duration) -> Bool {
        state.withLockedValue { state in
            guard let since = state.writingSince else { return false }
            return since.duration(to: clock.now) > limit
        }
    }

    /// The watchdog's wait: true once a write has been under way for longer than `limit` (looked at every
    /// quarter of it, on the outbox's clock), false if the task is cancelled first.
    func stalls(longerThan limit: Duration) async -> Bool {
        while !Task.isCancelled {
            try? await clock.sleep(for: limit / 4)
            if isStalled(longerThan: limit) { return true }
        }
        return false
    }

    /// No more is queued. `dropping`: what is queued goes unsent (the session is closing); otherwise the
    /// writer sends it first. A waiting sender or writer is let go.
    func finish(dropping: Bool) {
        let (sender, writer): (CheckedContinuation<Bool, Never>?, CheckedContinuation<String?, Never>?) =
            state.withLockedValue { state in
                state.finished = true
                if dropping {
                    state.queue = []
                    state.head = 0
                    state.notifications = 0
                }
                let sender = dropping ? state.sender : nil
                if dropping { state.sender = nil }
                // A writer waits only on an empty queue.
                let writer = state.writer
                state.writer = nil
                return (sender, writer)
            }
        sender?.resume(returning: false)
        writer?.resume(returning: nil)
    }
}
