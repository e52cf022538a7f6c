import Glibc

/// Starts a detached system thread that runs `body` (haul's long-lived threads: the I/O executor's, curl's,
/// the terminal's, a child's waiter). Foundation's `Thread` did this before; it is not in FoundationEssentials, and `haul`
/// links no more of Foundation than that.
/// - Returns: nil when it started, else why not (the system's word for `pthread_create`'s error, as
///   "Resource temporarily unavailable" when the system has no room for another thread); `body` then never runs.
@discardableResult
func detachThread(_ body: @escaping @Sendable () -> Void) -> String? {
    let code = startDetachedThread(body)
    return code == 0 ? nil : String(cString: strerror(code))
}

/// `pthread_create` of a detached thread running `body`: 0, or its error (`body` then never runs).
private func startDetachedThread(_ body: @escaping @Sendable () -> Void) -> Int32 {
    final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
    var thread = pthread_t()
    let context = Unmanaged.passRetained(Body(body)).toOpaque()
    let result = pthread_create(&thread, nil, { context in
        Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
        return nil
    }, context)
    guard result == 0 else {
        Unmanaged<Body>.fromOpaque(context).release()
        return result
    }
    pthread_detach(thread)
    return 0
}

/// `detachThread` for a thread the process cannot go on without: where none can be started, haul says so in one
/// line and exits 1 (as for any other failure of the system it runs on) rather than trapping with a backtrace.
/// `EAGAIN` ("Resource temporarily unavailable": no room for a thread at this moment) is waited out first, as
/// libdispatch does for its own workers: a loaded machine refused a `haul service start` its first thread once.
package func detachEssentialThread(_ body: @escaping @Sendable () -> Void) {
    let code = EssentialThread.start(trying: { startDetachedThread(body) }, wait: { usleep($0 * 1000) })
    guard code != 0 else { return }
    TextOutput.standard.err("haul: cannot start a thread: \(String(cString: strerror(code)))")
    exit(FailureCategory.other.exitCode)
}

/// How an essential thread is started: tried again after `waits` (milliseconds, about a second in all) while the
/// system answers `EAGAIN`.
enum EssentialThread {
    static let waits: [UInt32] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]

    /// 0 once `attempt` (a `pthread_create`) succeeded, else its last error.
    static func start(trying attempt: () -> Int32, wait: (UInt32) -> Void) -> Int32 {
        var waits = Self.waits[...]
        while true {
            let code = attempt()
            guard code == EAGAIN, let next = waits.popFirst() else { return code }
            wait(next)
        }
    }
}
