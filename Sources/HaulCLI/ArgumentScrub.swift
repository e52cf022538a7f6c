import CLinux
import Glibc

/// Blanks the password of `--user USER:PASSWORD` (and `-u`, `--user=`), and of a `--proxy` URL's
/// `USER:PASSWORD@`, in the process's own argument memory, which is what /proc/PID/cmdline and `ps` show to every local user, as curl does. The parsed
/// copy (`CommandLine.arguments`) keeps it.
enum ArgumentScrub {
    static func hidePasswords() {
        // `CommandLine.arguments` is made from argv on first use: made now, it keeps the real values.
        _ = CommandLine.arguments
        let argv = CommandLine.unsafeArgv
        let count = Int(CommandLine.argc)
        var index = 1
        while index < count {
            guard let argument = argv[index] else { break }
            let text = String(cString: argument)
            if text == "--" { return }
            if text == "--user" || text == "-u" {
                if index + 1 < count, let value = argv[index + 1] { blankAfterColon(value) }
                index += 2
                continue
            }
            if text == "--proxy" {
                if index + 1 < count, let value = argv[index + 1] { blankURLPassword(value) }
                index += 2
                continue
            }
            if text.hasPrefix("--proxy=") { blankURLPassword(argument + "--proxy=".utf8.count) }
            if text.hasPrefix("--user=") {
                blankAfterColon(argument + "--user=".utf8.count)
            } else if text.hasPrefix("-u") && text.count > 2 {
                blankAfterColon(argument + 2)
            }
            index += 1
        }
    }

    /// `[SCHEME://]USER:PASSWORD@HOST`: the password's bytes become `*`.
    private static func blankURLPassword(_ value: UnsafeMutablePointer<CChar>) {
        var start = value
        if let scheme = strstr(value, "://") { start = scheme + 3 }
        guard let at = strchr(start, Int32(UInt8(ascii: "@"))) else { return }
        var cursor = start
        while cursor < at && cursor.pointee != CChar(UInt8(ascii: ":")) { cursor += 1 }
        guard cursor < at else { return }
        cursor += 1
        while cursor < at {
            cursor.pointee = CChar(UInt8(ascii: "*"))
            cursor += 1
        }
    }

    /// Overwrites what follows the first `:` with `*`, in place (the length stays, so nothing moves).
    private static func blankAfterColon(_ value: UnsafeMutablePointer<CChar>) {
        guard let colon = strchr(value, Int32(UInt8(ascii: ":"))) else { return }
        var cursor = colon + 1
        while cursor.pointee != 0 {
            cursor.pointee = CChar(UInt8(ascii: "*"))
            cursor += 1
        }
    }
}
