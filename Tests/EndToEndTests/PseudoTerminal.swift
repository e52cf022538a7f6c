import Foundation
import HaulCore
import NIOConcurrencyHelpers
import TestSupport

/// The real `haul` binary on a pseudo-terminal of its own, every byte it writes kept: what a terminal
/// emulator would be sent. For what tmux would interpret or drop on its way to the pane (the image protocols
/// of kitty, sixel and iTerm2); `TmuxSession` is for what a screen shows.
///
/// A thread reads the terminal's master side as bytes come; `waitFor` wakes on each read and checks its
/// condition against everything written so far, until it holds or a deadline passes.
final class PseudoTerminal: Sendable {
    private let master: Int32
    private let process: Process
    private let output = Output()
    private let arrivals: AsyncStream<Void>
    let home: ServiceHome

    /// Starts `haul ARGS` in `directory` on a `columns` x `rows` terminal whose cells are `cellWidth` x
    /// `cellHeight` pixels (as a graphical terminal reports them), `TERM=xterm-256color`, UTF-8.
    init(_ arguments: [String], in directory: String, columns: Int = 100, rows: Int = 30, cellWidth: Int = 8,
         cellHeight: Int = 16, environment: [String: String] = [:], home: ServiceHome = ServiceHome()) throws {
        self.home = home
        // posix_openpt, unlockpt and ptsname, as Linux does them (Swift's Glibc leaves those out).
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        var number: UInt32 = 0
        var unlock: Int32 = 0
        guard master >= 0, ioctl(master, Self.getNumber, &number) == 0, ioctl(master, Self.setLock, &unlock) == 0 else {
            throw PseudoTerminalError("cannot open a pseudo-terminal: errno \(errno)")
        }
        let name = "/dev/pts/\(number)"
        var size = winsize(ws_row: UInt16(rows), ws_col: UInt16(columns), ws_xpixel: UInt16(columns * cellWidth),
                           ws_ypixel: UInt16(rows * cellHeight))
        _ = ioctl(master, UInt(TIOCSWINSZ), &size)
        let slave = open(name, O_RDWR | O_NOCTTY)
        guard slave >= 0 else { throw PseudoTerminalError("cannot open \(name): errno \(errno)") }
        defer { close(slave) }

        process = Process()
        process.executableURL = URL(fileURLWithPath: HaulProcess.binary)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        var variables = ProcessInfo.processInfo.environment.merging(home.environment) { $1 }
            .merging(["TERM": "xterm-256color", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "NO_COLOR": "",
                      "XDG_CONFIG_HOME": "/nonexistent/haul-tests"]) { $1 }
            .merging(environment) { $1 }
        for name in ["TMUX", "STY", "COLORTERM", "KITTY_WINDOW_ID", "TERM_PROGRAM"] where environment[name] == nil {
            variables.removeValue(forKey: name)
        }
        process.environment = variables
        let terminal = FileHandle(fileDescriptor: slave, closeOnDealloc: false)
        process.standardInput = terminal
        process.standardOutput = terminal
        process.standardError = terminal

        let (arrivals, arrived) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.arrivals = arrivals
        try process.run()
        let (master, output) = (self.master, self.output)
        let reader = Thread {
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(master, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }  // EIO: every writer has gone
                output.bytes.withLockedValue { $0 += buffer[..<count] }
                arrived.yield()
            }
            arrived.finish()
        }
        reader.start()
    }

    deinit {
        if process.isRunning { process.terminate() }
        close(master)
    }

    /// Everything haul wrote to the terminal so far.
    var written: [UInt8] { output.bytes.withLockedValue { $0 } }

    /// TIOCGPTN and TIOCSPTLCK (the same on x86-64 and arm64).
    private static let getNumber: UInt = 0x8004_5430
    private static let setLock: UInt = 0x4004_5431

    private final class Output: Sendable {
        let bytes = NIOLockedValueBox<[UInt8]>([])
    }

    /// Types `text` (keys as the terminal sends them: "\u{1b}" is Escape).
    func type(_ text: String) throws {
        try FileIO.writeAll(master, Array(text.utf8))
    }

    /// Waits until `condition` holds for everything written so far, and returns that.
    @discardableResult
    func waitFor(_ what: String, within bound: Duration = .seconds(15),
                 _ condition: @escaping @Sendable ([UInt8]) -> Bool) async throws -> [UInt8] {
        try await within(bound, what) { [self] in
            for await _ in arrivals {
                let bytes = written
                if condition(bytes) { return bytes }
            }
            let bytes = written
            if condition(bytes) { return bytes }
            throw PseudoTerminalError("haul's terminal closed before \(what)")
        }
    }

    /// Waits for haul to exit; its status.
    func waitForExit(within bound: Duration = .seconds(15)) async throws -> Int32 {
        let process = self.process
        return try await within(bound, "haul's exit") {
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    process.waitUntilExit()
                    continuation.resume(returning: process.terminationStatus)
                }
            }
        }
    }
}

struct PseudoTerminalError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

extension Array where Element == UInt8 {
    /// Whether `text`'s UTF-8 bytes occur in these bytes.
    func contains(_ text: String) -> Bool {
        range(of: Array(text.utf8)) != nil
    }

    /// The first occurrence of `needle` at or after `start`.
    func range(of needle: [UInt8], from start: Int = 0) -> Range<Int>? {
        guard !needle.isEmpty, count >= needle.count, start <= count - needle.count else { return nil }
        for index in start...(count - needle.count) where self[index] == needle[0] {
            if self[index..<(index + needle.count)].elementsEqual(needle) { return index..<(index + needle.count) }
        }
        return nil
    }
}
