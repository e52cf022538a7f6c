import Foundation
import TestSupport

/// The real `haul` binary in a detached tmux session on a private tmux server (`-L`), so tests never touch
/// the user's tmux and each test has its own. The status line is off, so the pane is the whole window.
///
/// The terminal is observed with `capture-pane`: `waitFor` polls it every `pollInterval` (20 ms) until a
/// condition holds or a deadline passes. Polling the observed screen is the one way to wait on a real
/// terminal; nothing here sleeps to let something happen.
final class TmuxSession: Sendable {
    static let pollInterval = Duration.milliseconds(20)

    let socket: String
    let name = "haul"
    /// The state directory of the service this TUI attaches to (its own, unless a test shares one).
    let home: ServiceHome
    private let configPath: String

    /// Starts `haul ARGS` in `directory` on a `columns` x `rows` terminal, with a UTF-8 locale.
    ///
    /// A shell runs haul and stays: when haul exits it prints `haul exited STATUS` and the terminal's
    /// line-discipline modes (`modes: icanon echo` when haul restored them), then sleeps, so the pane and its
    /// terminal state can still be read.
    init(_ arguments: [String], in directory: String, columns: Int = 120, rows: Int = 30,
         environment: [String: String] = [:], home: ServiceHome = ServiceHome(),
         executable: String = HaulProcess.binary) throws {
        self.home = home
        socket = "haul-e2e-\(UUID().uuidString.prefix(8))"
        configPath = NSTemporaryDirectory() + socket + ".conf"
        try "set -g status off\nset -g default-terminal screen-256color\n"
            .write(toFile: configPath, atomically: true, encoding: .utf8)
        // The user's own config file stays out of the tests, as in `HaulProcess`; colours stay on although
        // `swift test` hands its children NO_COLOR=1 (a test that wants it sets it).
        let variables = environment.merging(home.environment) { mine, _ in mine }
            .merging(["XDG_CONFIG_HOME": "/nonexistent/haul-tests", "NO_COLOR": ""]) { mine, _ in mine }
            .sorted { $0.key < $1.key }
            .map { "\($0.key)=\($0.value)" }
        let haul = (["env", "LANG=C.UTF-8", "LC_ALL=C.UTF-8"] + variables + [executable] + arguments)
            .map(Self.quoted)
            .joined(separator: " ")
        let modes = "stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' '"
        let command = "\(haul); echo \"haul exited $?\"; echo \"modes: $(\(modes))\"; exec sleep 3600"
        try run(["new-session", "-d", "-s", name, "-x", "\(columns)", "-y", "\(rows)", "-c", directory, command])
    }

    deinit {
        _ = try? run(["kill-server"])
        try? FileManager.default.removeItem(atPath: configPath)
        // The server leaves its socket behind.
        let folder = ProcessInfo.processInfo.environment["TMUX_TMPDIR"] ?? "/tmp"
        try? FileManager.default.removeItem(atPath: "\(folder)/tmux-\(getuid())/\(socket)")
    }

    /// The pane's lines as shown now.
    func screen() throws -> [String] {
        Self.lines(of: try run(["capture-pane", "-p", "-t", name]))
    }

    /// `screen()` without blocking the caller's thread or starting one: `waitFor` polls every 20 ms, and a
    /// blocking `waitpid` held one of the two threads of Swift's cooperative pool each time (which with several
    /// screens polled at once starved the rest of the suite), and a thread per poll was a third of the 1,500
    /// threads the plain suite starts (1,503 -> 995 without it), more under the sanitizer, where the polls go on
    /// longer and whose runtime crashed among its thousands of short-lived threads (a SEGV inside
    /// ThreadSanitizer in thread T10062, no stack). The tmux client is reaped with `WNOHANG` between short
    /// sleeps instead: it ends within a few milliseconds.
    private func capturedScreen() async throws -> [String] {
        let child = try spawn(["capture-pane", "-p", "-t", name])
        defer { try? FileManager.default.removeItem(atPath: child.outputPath) }
        var status: Int32 = 0
        while true {
            let reaped = waitpid(child.pid, &status, WNOHANG)
            if reaped == child.pid || (reaped < 0 && errno != EINTR) { break }
            try await Task.sleep(for: .milliseconds(2))  // polls a child that ends in milliseconds
        }
        return Self.lines(of: (try? String(contentsOfFile: child.outputPath, encoding: .utf8)) ?? "")
    }

    private static func lines(of capture: String) -> [String] {
        var lines = capture.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    /// The pane's lines with their SGR escape sequences (colours, bold, reverse).
    func screenWithEscapes() throws -> String {
        try run(["capture-pane", "-p", "-e", "-t", name])
    }

    /// Types keys: tmux key names (`Enter`, `Tab`, `Down`, `Escape`) or single characters.
    func send(_ keys: String...) throws {
        try send(contentsOf: keys)
    }

    func send(contentsOf keys: [String]) throws {
        try run(["send-keys", "-t", name] + keys)
    }

    func resize(columns: Int, rows: Int) throws {
        try run(["resize-window", "-t", name, "-x", "\(columns)", "-y", "\(rows)"])
    }

    /// A tmux format for the pane, e.g. `#{pane_dead_status}`.
    func format(_ format: String) throws -> String {
        try run(["display-message", "-p", "-t", name, format]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// haul's process id: the child of the pane's shell.
    var pid: pid_t? {
        guard let shell = (try? format("#{pane_pid}")).flatMap({ Int($0) }),
            let children = try? String(contentsOfFile: "/proc/\(shell)/task/\(shell)/children", encoding: .utf8)
        else { return nil }
        return children.split(separator: " ").first.flatMap { pid_t($0) }
    }

    /// Polls the screen until `condition` holds; returns that screen, or throws `ScreenProblem` with the last
    /// screen in the message.
    @discardableResult
    func waitFor(_ what: String, within bound: Duration = .seconds(10), pollEvery interval: Duration = pollInterval,
                 _ condition: ([String]) -> Bool) async throws -> [String] {
        let deadline = ContinuousClock.now + TestEnvironment.bound(bound)
        var lines = try await capturedScreen()
        while !condition(lines) {
            guard ContinuousClock.now < deadline else {
                let problem = ScreenProblem(
                    description: "timed out waiting for \(what); the screen was:\n" + lines.joined(separator: "\n"))
                // Also straight to stderr: a sanitized CI run once reported such a failure without its text.
                FileHandle.standardError.write(Data("haul-e2e: \(problem.description)\n".utf8))
                throw problem
            }
            try await Task.sleep(for: interval)  // the poll interval of an observed terminal
            lines = try await capturedScreen()
        }
        return lines
    }

    /// Polls until haul has exited; returns its exit status and the screen then. The shell's line may begin
    /// mid-line (a haul that died in the full screen's modes, or wrote no newline last): it is looked for
    /// anywhere in a line. Not found, the test fails with the screen, instead of the whole suite's process.
    func waitForExit(within bound: Duration = .seconds(10)) async throws -> (status: Int, screen: [String]) {
        let screen = try await waitFor("haul to exit", within: bound) { $0.contains { $0.hasPrefix("modes: ") } }
        let marker = "haul exited "
        guard let line = screen.last(where: { $0.contains(marker) }),
              let start = line.range(of: marker, options: .backwards)?.upperBound
        else {
            throw ScreenProblem(description: "haul exited, but the shell's \"\(marker)STATUS\" line is not on the screen:\n"
                                + screen.joined(separator: "\n"))
        }
        return (Int(line[start...].prefix { $0.isNumber }) ?? -1, screen)
    }

    /// Runs one tmux command and returns its stdout.
    ///
    /// Spawned with posix_spawn and a clean signal mask: a test runs on a thread that blocks most signals,
    /// and a tmux server that inherits a blocked SIGCHLD never notices that haul exited. Its stdout goes to
    /// a file, not a pipe, since a server started by this command would inherit the pipe and keep it open.
    @discardableResult
    private func run(_ arguments: [String]) throws -> String {
        let child = try spawn(arguments)
        defer { try? FileManager.default.removeItem(atPath: child.outputPath) }
        var status: Int32 = 0
        while waitpid(child.pid, &status, 0) < 0 && errno == EINTR {}
        return (try? String(contentsOfFile: child.outputPath, encoding: .utf8)) ?? ""
    }

    /// Starts one tmux command with its stdout going to `outputPath` (which the caller removes).
    private func spawn(_ arguments: [String]) throws -> (pid: pid_t, outputPath: String) {
        let outputPath = NSTemporaryDirectory() + "\(socket)-\(UUID().uuidString.prefix(8)).out"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var environment = ProcessInfo.processInfo.environment
        environment["LANG"] = "C.UTF-8"
        environment["LC_ALL"] = "C.UTF-8"
        environment.removeValue(forKey: "TMUX")
        let argv = (["/usr/bin/tmux", "-L", socket, "-f", configPath] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, argv[0]!, &actions, &attributes, argv, envp)
        guard result == 0 else {
            try? FileManager.default.removeItem(atPath: outputPath)
            throw POSIXError(POSIXErrorCode(rawValue: result) ?? .ENOENT)
        }
        return (pid, outputPath)
    }

    private static func quoted(_ argument: String) -> String {
        "'" + argument.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

/// A condition on the screen did not come true in time.
/// The screen never showed what a test waited for, or not what the shell around haul always writes: the
/// screen is in the description.
struct ScreenProblem: Error, CustomStringConvertible {
    let description: String
}
