import Glibc

/// Signals while the full screen is up, turned into bytes on the terminal thread's wake pipe, plus a last
/// resort that puts the terminal back when the process crashes.
///
/// A signal may land on any thread, so the handlers do only what is async-signal-safe: `write` one byte
/// (`W` SIGWINCH, `I` SIGINT, `T` SIGTERM, `H` SIGHUP) to the pipe the terminal thread polls. On a crash
/// signal the handler restores the saved terminal modes with `tcsetattr`, writes the sequences that leave
/// the alternate screen and show the cursor, then re-raises the signal under the previous handler (the
/// Swift runtime's backtracer, or the default action).
enum TerminalSignals {
    static let wakeSignals: [Int32] = [SIGWINCH, SIGINT, SIGTERM, SIGHUP]
    static let crashSignals: [Int32] = [SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGABRT, SIGFPE]

    /// Installs the handlers and unblocks the wake signals on the calling thread. `wakeFD` is the write end
    /// of the terminal thread's pipe (non-blocking). Call on that thread before curses starts, so curses
    /// keeps its hands off these signals.
    static func install(wakeFD: Int32) {
        SignalGlobals.wakeFD = wakeFD
        SignalGlobals.hasSavedModes = tcgetattr(0, &SignalGlobals.savedModes) == 0
        for signal in wakeSignals {
            setHandler(signal, flags: SA_RESTART) { number in
                let saved = errno
                var byte: UInt8 = switch number {
                case SIGWINCH: UInt8(ascii: "W")
                case SIGINT: UInt8(ascii: "I")
                case SIGHUP: UInt8(ascii: "H")
                default: UInt8(ascii: "T")
                }
                _ = write(SignalGlobals.wakeFD, &byte, 1)
                errno = saved
            }
        }
        // This thread takes them even when haul was started with them blocked (a parent's mask is inherited).
        var wake = sigset_t()
        sigemptyset(&wake)
        for signal in wakeSignals { sigaddset(&wake, signal) }
        _ = pthread_sigmask(SIG_UNBLOCK, &wake, nil)
        for signal in crashSignals {
            setHandler(signal, flags: Int32(truncatingIfNeeded: SA_RESETHAND) | Int32(truncatingIfNeeded: SA_NODEFER)) { number in
                if SignalGlobals.hasSavedModes { _ = tcsetattr(0, TCSANOW, &SignalGlobals.savedModes) }
                let reset: StaticString = "\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l\r\n"
                _ = write(1, reset.utf8Start, reset.utf8CodeUnitCount)
                if let previous = SignalGlobals.previous?[Int(number)] {
                    var action = previous
                    _ = sigaction(number, &action, nil)
                }
                _ = raise(number)
            }
        }
    }

    /// Puts back the handlers that were there before `install`.
    static func uninstall() {
        guard let previous = SignalGlobals.previous else { return }
        for signal in wakeSignals + crashSignals {
            var action = previous[Int(signal)]
            _ = sigaction(signal, &action, nil)
        }
        SignalGlobals.wakeFD = -1
    }

    private static func setHandler(_ signal: Int32, flags: Int32, _ handler: @convention(c) (Int32) -> Void) {
        if SignalGlobals.previous == nil {
            let table = UnsafeMutablePointer<sigaction>.allocate(capacity: 65)
            table.initialize(repeating: sigaction(), count: 65)
            SignalGlobals.previous = table
        }
        var action = sigaction()
        action.__sigaction_handler.sa_handler = handler
        sigemptyset(&action.sa_mask)
        action.sa_flags = flags
        _ = sigaction(signal, &action, SignalGlobals.previous! + Int(signal))
    }
}

/// State the signal handlers read. Written only by `install`/`uninstall` (before the handlers run and
/// after they are gone), so a handler never sees a half-written value; plain globals because a signal
/// handler cannot take a lock.
private enum SignalGlobals {
    nonisolated(unsafe) static var wakeFD: Int32 = -1
    nonisolated(unsafe) static var savedModes = termios()
    nonisolated(unsafe) static var hasSavedModes = false
    /// The handlers replaced, indexed by signal number (allocated once, never freed).
    nonisolated(unsafe) static var previous: UnsafeMutablePointer<sigaction>?
}
