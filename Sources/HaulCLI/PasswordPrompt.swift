import CLinux
import Glibc
import HaulCore

/// Asks for a password on the controlling terminal with echo off, as curl and ssh do: not on stdin (which
/// may be a pipe of URLs) and never shown.
enum PasswordPrompt {
    static func read(prompt: String) throws(HaulError) -> String {
        let tty = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)
        guard tty >= 0 else {
            throw HaulError(.usage, "--user: no password given and no terminal to ask for it on; "
                            + "give USER:PASSWORD, or put the login in ~/.netrc and use --netrc")
        }
        defer { close(tty) }
        var saved = termios()
        let hasTermios = tcgetattr(tty, &saved) == 0
        if hasTermios {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            quiet.c_lflag |= tcflag_t(ICANON)
            tcsetattr(tty, TCSAFLUSH, &quiet)
        }
        // Restored whatever happens, so the terminal never stays silent.
        defer {
            if hasTermios { tcsetattr(tty, TCSAFLUSH, &saved) }
            _ = write(tty, "\n", 1)
        }
        try? FileIO.writeAll(tty, Array(prompt.utf8))
        var line: [UInt8] = []
        var byte: [UInt8] = [0]
        while true {
            let count = (try? FileIO.read(tty, into: &byte)) ?? 0
            if count == 0 || byte[0] == UInt8(ascii: "\n") { break }
            if byte[0] != UInt8(ascii: "\r") { line.append(byte[0]) }
            if line.count > 4096 { throw HaulError(.usage, "--user: the password is longer than 4096 bytes") }
        }
        return String(decoding: line, as: UTF8.self)
    }
}
