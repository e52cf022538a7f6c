import Glibc

/// Starts a detached system thread that runs `body` (haul's long-lived threads: the I/O executor's, curl's,
/// the terminal's, a child's waiter). Foundation's `Thread` did this before; it is not in FoundationEssentials, and `haul`
/// links no more of Foundation than that.
package func detachThread(_ body: @escaping @Sendable () -> Void) {
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
    guard result == 0 else { fatalError("cannot start a thread: \(String(cString: strerror(result)))") }
    pthread_detach(thread)
}
