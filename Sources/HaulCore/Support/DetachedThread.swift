import Glibc

/// Starts a detached system thread that runs `body` (haul's long-lived threads: the I/O executor's, curl's,
/// the terminal's, a child's waiter). Foundation's `Thread` did this before; it is not in FoundationEssentials, and `haul`
/// links no more of Foundation than that.
/// - Returns: nil when it started, else why not (the system's word for `pthread_create`'s error, as
///   "Resource temporarily unavailable" when the system has no room for another thread); `body` then never runs.
@discardableResult
package func detachThread(_ body: @escaping @Sendable () -> Void) -> String? {
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
        return String(cString: strerror(result))
    }
    pthread_detach(thread)
    return nil
}

/// `detachThread` for a thread the process cannot go on without: where none can be started, haul says so in one
/// line and exits 1 (as for any other failure of the system it runs on) rather than trapping with a backtrace.
package func detachEssentialThread(_ body: @escaping @Sendable () -> Void) {
    guard let problem = detachThread(body) else { return }
    TextOutput.standard.err("haul: cannot start a thread: \(problem)")
    exit(1)
}
