import Glibc
import HaulCore

/// `o` and `O`: hands a file or a folder to the desktop's opener (`xdg-open`), detached from the screen:
/// nothing it prints lands on the full screen, and a Ctrl-C meant for haul is not its.
enum Opener {
    /// nil when started; else the line to show.
    static func open(_ path: String) -> String? {
        let result = ChildProcess.start(["xdg-open", path], output: .discard, ownProcessGroup: true)
        if result == 0 { return nil }
        return result == ENOENT ? "Cannot open: xdg-open is not installed (xdg-utils)"
            : "Cannot open: \(String(cString: strerror(result)))"
    }
}
