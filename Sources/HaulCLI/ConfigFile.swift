import ArgumentParser
import CLinux
import FoundationEssentials
import Glibc
import HaulCore
import TOMLKit

/// The config file: `$XDG_CONFIG_HOME/haul/config.toml` (`~/.config/haul/config.toml`), `--config FILE`, or
/// none with `--no-config`.
///
/// Its keys are the long option names, at the top level (`jobs = 8`, `output-dir = "~/Downloads"`,
/// `rpc-listen = "127.0.0.1:6800"`); a switch is `true` or `false`, a repeatable option takes a list. The
/// keys become arguments put in front of the command line's own, so the command line wins (a later value
/// replaces an earlier one; lists add up). The set of keys is read off the argument parser's own description
/// of the commands, so an option added to the command line is a key at once. Each command takes the keys it
/// has: the download options go to `haul URL...` and `haul add`, the service's to `haul service start|run`;
/// a key no command has is an error, as is a bad value: one line naming the file, the line and the key, exit 2.
struct ConfigFile: Sendable {
    /// Which file: chosen on the command line before anything else is parsed.
    enum Selection: Sendable, Equatable {
        case standard
        case file(String)
        case none

        /// This process's: a service it starts is given the same.
        static let current: Selection = (try? ConfigFile.select(Array(CommandLine.arguments.dropFirst())))?.0 ?? .standard

        /// What a service started on this one's behalf is given, so that it reads the same file.
        var arguments: [String] {
            switch self {
            case .standard: []
            case .file(let path): ["--config", FilePath.absolute(path)]
            case .none: ["--no-config"]
            }
        }
    }

    /// The commands that take keys.
    enum Scope: CaseIterable, Sendable {
        /// `haul URL...`, `haul` (the TUI), `haul add`.
        case download
        /// `haul service start` and `haul service run`.
        case service
    }

    /// One key of the file, as the arguments it stands for.
    struct Entry: Sendable {
        let key: String
        let line: Int
        let arguments: [String]
        let scopes: Set<Scope>
    }

    struct Problem: Error {
        let message: String
    }

    let path: String
    let entries: [Entry]

    /// Keys that are options of one run, never settings: a single file's name, checksum or mirrors, a URL list.
    static let excludedKeys: Set<String> = [
        "output", "checksum", "mirror", "input-file", "metalink", "demo", "server", "config", "no-config", "help", "version",
        "category",
        // A login's password belongs in ~/.netrc (`netrc = true`), not here.
        "user",
    ]
    /// The plural spellings the aria2 face's keys also go by.
    static let aliases = ["rpc-allowed-dirs": "rpc-allowed-dir", "rpc-allowed-origins": "rpc-allowed-origin"]
    /// Keys whose value is a path: `~` is the home directory, and a relative path is taken from it.
    static let pathKeys: Set<String> = ["output-dir", "rpc-secret-file", "rpc-allowed-dir", "rpc-certificate", "rpc-private-key"]
    /// More than this is not a config file.
    static let largestSize = 1 << 20

    // MARK: choosing and reading the file

    /// Takes `--config FILE`, `--config=FILE` and `--no-config` out of the arguments (up to a `--`).
    static func select(_ arguments: [String]) throws(Problem) -> (Selection, [String]) {
        var selection = Selection.standard
        var rest: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                rest += arguments[(index - 1)...]
                break
            } else if argument == "--no-config" {
                selection = .none
            } else if argument == "--config" {
                guard index < arguments.count, !arguments[index].isEmpty else {
                    throw Problem(message: "--config needs a FILE")
                }
                selection = .file(arguments[index])
                index += 1
            } else if argument.hasPrefix("--config=") {
                let path = String(argument.dropFirst("--config=".count))
                guard !path.isEmpty else { throw Problem(message: "--config needs a FILE") }
                selection = .file(path)
            } else {
                rest.append(argument)
            }
        }
        return (selection, rest)
    }

    /// The standard place: `$XDG_CONFIG_HOME/haul/config.toml`, else `~/.config/haul/config.toml`.
    static func standardPath(_ environment: [String: String]) -> String? {
        if let base = environment["XDG_CONFIG_HOME"], base.hasPrefix("/") {
            return FilePath.join(base, "haul/config.toml")
        }
        guard let home = environment["HOME"], !home.isEmpty else { return nil }
        return FilePath.join(home, ".config/haul/config.toml")
    }

    /// The file the selection names, read and checked; nil when there is none to read.
    static func load(_ selection: Selection, environment: [String: String]) throws(Problem) -> ConfigFile? {
        let path: String
        switch selection {
        case .none: return nil
        case .file(let named): path = named
        case .standard:
            guard let standard = standardPath(environment) else { return nil }
            var info = stat()
            // No file in the standard place, or none this user can reach (another user's home: a
            // command run through setpriv or sudo -u): no config, as for every peer's rc file.
            if stat(standard, &info) != 0 { return nil }
            path = standard
        }
        let text = try read(path)
        return try ConfigFile(path: path, text: text, home: environment["HOME"] ?? "/")
    }

    private static func read(_ path: String) throws(Problem) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw Problem(message: "config file \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw Problem(message: "config file \(path): not a regular file") }
        // Its settings act as the user (and name files the service writes): one that another user may
        // change is refused, as ssh refuses such a config.
        if info.st_mode & S_IWOTH != 0 {
            throw Problem(message: "config file \(path) is writable by every user; `chmod o-w` it")
        }
        if info.st_uid != getuid() && info.st_uid != 0 {
            throw Problem(message: "config file \(path) belongs to another user (uid \(info.st_uid))")
        }
        guard info.st_size <= largestSize else {
            throw Problem(message: "config file \(path) is larger than \(largestSize >> 20) MiB")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Problem(message: "config file \(path): cannot read it")
        }
        guard let text = String(validating: data, as: UTF8.self) else {
            throw Problem(message: "config file \(path): not UTF-8 text")
        }
        return text
    }

    // MARK: keys

    /// Parses `text` and turns each key into the arguments it stands for.
    private init(path: String, entries: [Entry]) {
        self.path = path
        self.entries = entries
    }

    init(path: String, text: String, home: String) throws(Problem) {
        self.path = path
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw Problem(message: "\(path):\(error.source.begin.line): \(error.description)")
        } catch {
            throw Problem(message: "\(path): \(error)")
        }
        let schema = Self.schema
        var entries: [Entry] = []
        for key in table.keys {
            let line = Self.line(of: key, in: text)
            func problem(_ message: String) -> Problem {
                Problem(message: "\(path):\(line.map(String.init) ?? "?"): \(key): \(message)")
            }
            guard let value = table[key] else { continue }
            if key == "categories" {
                entries.append(try Self.categoryEntry(value, text: text, path: path, home: home))
                continue
            }
            let name = Self.aliases[key] ?? key
            guard let option = schema[name], !Self.excludedKeys.contains(name) else {
                if value.type == .table {
                    throw problem("tables are not used: put the keys at the top of the file")
                }
                if name == "rpc-secret" {
                    throw problem("a secret is not kept in the config: put it in a file of mode 0600 and name "
                                  + "that file with rpc-secret-file")
                }
                throw problem(Self.excludedKeys.contains(name)
                    ? "not a setting (it belongs to one command line)"
                    : "unknown key (keys are the long option names: see haul --help)")
            }
            var values: [TOMLValueConvertible] = [value]
            if value.type == .array, let array = value.array {
                guard option.repeats else { throw problem("takes one value, not a list") }
                values = Array(array)
            }
            var arguments: [String] = []
            for item in values {
                if option.isFlag {
                    guard let on = item.bool else { throw problem("is a switch: true or false") }
                    if on { arguments.append("--\(name)") }
                    continue
                }
                var text: String
                if let string = item.string {
                    text = string
                } else if let number = item.int {
                    text = String(number)
                } else if let number = item.double {
                    text = String(number)
                } else {
                    throw problem("takes a value (a string or a number), not \(item.type)")
                }
                if Self.pathKeys.contains(name) { text = Self.expand(text, home: home) }
                arguments.append("--\(name)=\(text)")
            }
            entries.append(Entry(key: key, line: line ?? 0, arguments: arguments, scopes: option.scopes))
        }
        // The file's order, so that an error names the first bad line and later keys act later.
        self.entries = entries.sorted { $0.line < $1.line }
    }

    /// The arguments a command of `scope` is given in front of its own.
    func arguments(for scope: Scope) -> [String] {
        entries.filter { $0.scopes.contains(scope) }.flatMap(\.arguments)
    }

    /// `~` and `~/x` are in the home directory, and so is a relative path: a config file applies wherever
    /// haul is started from, so a path in it must not depend on the current directory.
    static func expand(_ path: String, home: String) -> String {
        if path == "~" { return home }
        if path.hasPrefix("~/") { return FilePath.join(home, String(path.dropFirst(2))) }
        if path.hasPrefix("/") { return path }
        return FilePath.join(home, path)
    }

    /// The line (from 1) where `key` is set at the top level; nil if it cannot be found.
    static func line(of key: String, in text: String) -> Int? {
        let spellings = [key, "\"\(key)\"", "'\(key)'"]
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            if trimmed.hasPrefix("[\(key)]") || trimmed.hasPrefix("[[\(key)]]") { return index + 1 }
            for spelling in spellings where trimmed.hasPrefix(spelling) {
                let rest = trimmed.dropFirst(spelling.count).drop { $0 == " " || $0 == "\t" }
                if rest.first == "=" || rest.first == "." { return index + 1 }
            }
        }
        return nil
    }

    // MARK: checking values

    /// Parses `commandLine` after the file's arguments for `scope`. When the file makes a command line fail
    /// that parses alone, the error names the line of the key to blame (see `blame`); a command line that
    /// fails alone fails as it would without a file.
    func parse<Result>(_ scope: Scope, _ commandLine: [String], as parse: ([String]) throws -> Result) throws -> Result {
        let own = entries.filter { $0.scopes.contains(scope) }
        do {
            return try parse(own.flatMap(\.arguments) + commandLine)
        } catch {
            guard (try? parse(commandLine)) != nil else { throw error }
            throw blame(own, error) { _ = try parse($0 + commandLine) }
        }
    }

    /// The same file without `keys`.
    func without(_ keys: Set<String>) -> ConfigFile {
        ConfigFile(path: path, entries: entries.filter { !keys.contains($0.key) })
    }

    /// Checks every value of the file, for every command, so that a bad value is found by whichever
    /// command runs first (and not only by a service that would fail to start over it).
    func check() throws(Problem) {
        let scopes: [(Scope, ([String]) throws -> Void)] = [
            (.download, { _ = try HaulCommand.parse($0 + ["--attach"]) }),
            (.service, { _ = try ServiceSettings.parse($0) }),
        ]
        for (scope, parse) in scopes {
            let own = entries.filter { $0.scopes.contains(scope) }
            do {
                try parse(own.flatMap(\.arguments))
            } catch {
                throw blame(own, error, parse)
            }
        }
    }

    /// The key to blame when `entries` together fail with `error`: the first whose removal makes the rest
    /// pass (a bad value, or a key that needs another), else the first that fails alone, else the file.
    private func blame(_ entries: [Entry], _ error: any Error, _ parse: ([String]) throws -> Void) -> Problem {
        func problem(_ entry: Entry, _ failure: any Error) -> Problem {
            Problem(message: "\(path):\(entry.line): \(entry.key): \(Self.describe(failure))")
        }
        for (index, entry) in entries.enumerated() {
            var others = entries
            others.remove(at: index)
            if (try? parse(others.flatMap(\.arguments))) != nil {
                return problem(entry, error)
            }
        }
        for entry in entries {
            do { try parse(entry.arguments) } catch { return problem(entry, error) }
        }
        return Problem(message: "\(path): \(Self.describe(error))")
    }

    private static func describe(_ error: any Error) -> String {
        if let problem = error as? Problem { return problem.message }
        return HaulCommand.message(for: error)
    }

    // MARK: the keys, as the argument parser describes the commands

    struct Option {
        let isFlag: Bool
        let repeats: Bool
        var scopes: Set<Scope>
    }

    /// Every long option name of the commands that take keys, with what it takes.
    static let schema: [String: Option] = {
        var schema: [String: Option] = [:]
        for (scope, description) in [(Scope.download, HaulCommand._dumpHelp()), (.service, ServiceSettings._dumpHelp())] {
            guard let info = try? JSONDecoder().decode(ToolInfo.self, from: Data(description.utf8)) else { continue }
            for argument in info.command.arguments ?? [] where argument.shouldDisplay && argument.kind != "positional" {
                for name in argument.names ?? [] where name.kind == "long" {
                    if schema[name.name] == nil {
                        schema[name.name] = Option(isFlag: argument.kind == "flag", repeats: argument.isRepeating, scopes: [])
                    }
                    schema[name.name]?.scopes.insert(scope)
                }
            }
        }
        return schema
    }()

    /// The parts of the argument parser's `--experimental-dump-help` description read here.
    private struct ToolInfo: Decodable {
        struct Command: Decodable {
            let arguments: [Argument]?
        }
        struct Argument: Decodable {
            let kind: String
            let names: [Name]?
            let isRepeating: Bool
            let shouldDisplay: Bool
        }
        struct Name: Decodable {
            let kind: String
            let name: String
        }
        let command: Command
    }
}
