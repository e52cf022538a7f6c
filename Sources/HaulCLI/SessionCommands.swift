import ArgumentParser
import CLinux
import FoundationEssentials
import Glibc
import HaulCore
import HaulServiceClient

/// The session verbs: `haul add|ls|pause|resume|cancel|retry|rm|move|attach|service ...`, each a client of the
/// per-user service (started on demand). Exit codes: 0 done, 1 the service could not be reached or
/// started, 2 usage or an unknown id.
enum SessionCommands {
    static var directory: StateDirectory { StateDirectory.resolve(ProcessInfo.processInfo.environment) }

    /// Runs `arguments` (the verb first) and returns the exit code.
    static func run(_ arguments: [String], config: ConfigFile?) async -> Int32 {
        if Verb(arguments) == .add { return await add(Array(arguments.dropFirst()), config: config) }
        let command: any ParsableCommand
        do {
            // `service start|run` take the service's keys of the config file, after the verbs.
            if let config, Verb.startsService(arguments) {
                let verbs = Array(arguments.prefix(2))
                command = try config.parse(.service, Array(arguments.dropFirst(2))) { try Sessions.parseAsRoot(verbs + $0) }
            } else {
                command = try Sessions.parseAsRoot(arguments)
            }
        } catch {
            return CommandLineExit.code(for: error, parsing: Sessions.self, prefix: "haul: ")
        }
        guard let verb = command as? any SessionVerb else {
            // `--help` (the parser answers it with a help command of its own) or a group without its verb
            // (`haul service`): what the parser's own `run` makes of them, the help on stdout.
            do {
                var other = command
                try other.run()
                return 0
            } catch {
                return CommandLineExit.code(for: error, parsing: Sessions.self, prefix: "haul: ")
            }
        }
        do {
            return try await verb.execute()
        } catch {
            TextOutput.standard.err("haul: \(error.message)")
            return FailureCategory.other.exitCode
        }
    }

    /// `haul add [OPTIONS] URL...`: the download options of `haul`, then each added download's `ID NAME`.
    static func add(_ arguments: [String], config: ConfigFile?) async -> Int32 {
        var command: HaulCommand
        do {
            command = try Entry.parse(HaulCommand.self, arguments, config: config)
            try command.askForPassword()
        } catch {
            return CommandLineExit.code(for: error, parsing: HaulCommand.self, prefix: "haul: add: ")
        }
        if command.writesToStandardOutput {
            TextOutput.standard.err("haul: add: -O - writes to the standard output of a download run here (haul -O - URL), not to the queue")
            return FailureCategory.usage.exitCode
        }
        let urls: [InputEntry]
        let listed: [InputEntry]
        switch Entry.inputURLs(command) {
        case .success(let extra): (urls, listed) = HaulCommand.separatingMetalinks(extra)
        case .failure(let code): return code
        }
        let metalinks: (jobs: [DownloadJob], code: Int32)
        switch command.metalinkDownloads(absolute: true, listed: listed) {
        case .success(let jobs, let code): metalinks = (jobs, code)
        case .failure(let code): return code
        }
        do {
            let client = try await ServiceClient.connect(directory, starting: ServiceSettings.starting(jobs: command.concurrency))
            // A service that was running already takes -j from now on (one that this started has it already).
            if let jobs = command.jobs { await ServiceSettings.give(jobs: jobs, to: client) }
            let added = try await client.add(metalinks.jobs + command.downloads(extra: urls, absolute: true))
            // --limit-rate caps what the service's downloads share, as the full-screen interface sets it.
            if let rate = command.overallRate { try await client.setLimit(rate) }
            if command.json {
                TextOutput.standard.out(String(decoding: Wire.encode(added), as: UTF8.self))
            } else if !command.quiet {
                for entry in added { TextOutput.standard.out("\(entry.id) \(entry.file)") }
            }
            return metalinks.code
        } catch {
            TextOutput.standard.err("haul: \(error.message)")
            return FailureCategory.other.exitCode
        }
    }
}

/// A session command that runs.
protocol SessionVerb: ParsableCommand {
    /// The exit code; throws when the service cannot be reached (exit 1).
    func execute() async throws(HaulError) -> Int32
}

struct Sessions: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "haul",
        abstract: "The download queue, kept by a per-user service.",
        subcommands: [List.self, Pause.self, Resume.self, Cancel.self, Retry.self, RefreshDownload.self, Remove.self, Move.self,
                      ServiceCommand.self])
}

/// Ids, or `--all`.
struct Selection: ParsableArguments {
    @Argument(help: "Download ids (see haul ls).")
    var ids: [String] = []

    @Flag(help: "Every download.")
    var all = false

    func validate() throws {
        if all && !ids.isEmpty { throw ValidationError("give ids or --all, not both") }
        if !all && ids.isEmpty { throw ValidationError("give the ids of downloads (see haul ls), or --all") }
        for id in ids where Int(id).map({ $0 <= 0 }) ?? true {
            throw ValidationError("'\(id)' is not a download id")
        }
    }

    var wire: Wire.Selection {
        all ? Wire.Selection(all: true) : Wire.Selection(ids: ids.compactMap { Int($0) })
    }
}

extension SessionVerb {
    /// Sends `verb` for the selection; an unknown id or a refusal is exit 2.
    func send(_ verb: String, _ selection: Selection, json: Bool) async throws(HaulError) -> Int32 {
        let client = try await ServiceClient.connect(SessionCommands.directory)
        switch try await client.perform(verb, selection.wire) {
        case .success(let ids):
            if json { TextOutput.standard.out(String(decoding: Wire.encode(Wire.Applied(ids: ids)), as: UTF8.self)) }
            return 0
        case .failure(let failure):
            TextOutput.standard.err("haul: \(verb): \(failure.error)")
            return FailureCategory.usage.exitCode
        }
    }
}

struct Pause: SessionVerb {
    static let configuration = CommandConfiguration(abstract: "Pause downloads; .part stays, resume continues it.")
    @OptionGroup var selection: Selection
    @Flag(help: "Print the ids it applied to as JSON.") var json = false
    func execute() async throws(HaulError) -> Int32 { try await send("pause", selection, json: json) }
}

struct Resume: SessionVerb {
    static let configuration = CommandConfiguration(abstract: "Resume paused downloads.")
    @OptionGroup var selection: Selection
    @Flag(help: "Print the ids it applied to as JSON.") var json = false
    func execute() async throws(HaulError) -> Int32 { try await send("resume", selection, json: json) }
}

struct Cancel: SessionVerb {
    static let configuration = CommandConfiguration(abstract: "Cancel downloads; .part stays, retry continues it.")
    @OptionGroup var selection: Selection
    @Flag(help: "Print the ids it applied to as JSON.") var json = false
    func execute() async throws(HaulError) -> Int32 { try await send("cancel", selection, json: json) }
}

struct Retry: SessionVerb {
    static let configuration = CommandConfiguration(abstract: "Retry failed or cancelled downloads, resuming.")
    @OptionGroup var selection: Selection
    @Flag(help: "Print the ids it applied to as JSON.") var json = false
    func execute() async throws(HaulError) -> Int32 { try await send("retry", selection, json: json) }
}

/// `haul refresh ID URL`. A download that runs is refused rather than paused for the user: its address works
/// (it is running), and a refresh that replaced a working address by mistake would cost the user the transfer.
struct RefreshDownload: SessionVerb {
    static let configuration = CommandConfiguration(
        commandName: "refresh",
        abstract: "Give a paused or failed download a new address that serves the same file; it continues from its .part.",
        discussion: """
            haul checks that URL serves the same file (its size, its validators where both give them, and the \
            bytes of a block the part already holds); a different file is refused with one line, and the part is \
            left as it was. Exit 0 once the download is queued again; 2 for an unknown id, a download that runs \
            (pause it first) or another file; the network's code when URL cannot be asked.
            """)
    @Argument(help: "The download's id (see haul ls).") var id: String
    @Argument(help: "The new address.") var url: String
    @Flag(help: "Print the answer as JSON.") var json = false

    func validate() throws {
        if Int(id).map({ $0 <= 0 }) ?? true { throw ValidationError("'\(id)' is not a download id") }
    }

    func execute() async throws(HaulError) -> Int32 {
        let client = try await ServiceClient.connect(SessionCommands.directory)
        switch try await client.refresh(Int(id) ?? 0, to: url) {
        case .success(let refreshed):
            if json { TextOutput.standard.out(String(decoding: Wire.encode(refreshed), as: UTF8.self)) }
            return 0
        case .failure(let failure):
            TextOutput.standard.err("haul: refresh: \(failure.error)")
            return failure.exitCode
        }
    }
}

struct Remove: SessionVerb {
    static let configuration = CommandConfiguration(
        commandName: "rm", abstract: "Forget finished downloads (their files stay); a queued or running one: exit 2.",
        discussion: """
            With --files, haul deletes what it wrote for those downloads instead: the finished file or its \
            .part, the part's state and journal, and a partial preview. A running, queued or paused download is \
            cancelled first. Only files haul made go: a file that was at the name before haul claimed it (or \
            replaced it since), a symbolic link, and anything outside the output directory are left, each said \
            on one line; another hard link to the file keeps its bytes. The row stays, saying "removed with \
            files" (`haul rm` without --files then forgets it). Exit 0; 3 when a file of haul's could not be \
            deleted (the others still are); 2 for an unknown id.
            """)
    @OptionGroup var selection: Selection
    @Flag(help: "Delete the files haul wrote for them instead (file, .part, state, journal, preview), cancelling running ones; the rows stay.")
    var files = false
    @Flag(help: "Print the ids it applied to (with --files: what was deleted, left and not deleted) as JSON.")
    var json = false

    func execute() async throws(HaulError) -> Int32 {
        guard files else { return try await send("remove", selection, json: json) }
        let client = try await ServiceClient.connect(SessionCommands.directory)
        switch try await client.removeFiles(selection.wire) {
        case .success(let removal):
            if json { TextOutput.standard.out(String(decoding: Wire.encode(removal), as: UTF8.self)) }
            for left in removal.left { TextOutput.standard.err("haul: rm: \(left.path) \(left.reason); left as it is") }
            for failed in removal.failed { TextOutput.standard.err("haul: rm: cannot delete \(failed.path): \(failed.reason)") }
            return removal.failed.isEmpty ? 0 : FailureCategory.fileIO.exitCode
        case .failure(let failure):
            TextOutput.standard.err("haul: rm: \(failure.error)")
            return FailureCategory.usage.exitCode
        }
    }
}

/// `haul move ID top|up|down|bottom`: the waiting queue's order, which decides what starts next.
struct Move: SessionVerb {
    static let configuration = CommandConfiguration(
        abstract: "Move a queued or paused download in the queue: top, up, down or bottom.",
        discussion: """
            Queued downloads start in the queue's order (paused ones keep their place in it); the order is \
            kept across restarts of the service, and is aria2's changePosition order too. Prints the new \
            position (1 is next to start). Exit 2 for an unknown id or a download that is not waiting \
            (running or finished).
            """)
    @Argument(help: "The download's id (see haul ls).") var id: String
    @Argument(help: "top, up, down or bottom.") var place: String
    @Flag(help: "Print the answer as JSON.") var json = false

    func validate() throws {
        if Int(id).map({ $0 <= 0 }) ?? true { throw ValidationError("'\(id)' is not a download id") }
        if QueuePlace(rawValue: place) == nil {
            throw ValidationError("'\(place)' is not a place in the queue: give top, up, down or bottom")
        }
    }

    func execute() async throws(HaulError) -> Int32 {
        let client = try await ServiceClient.connect(SessionCommands.directory)
        switch try await client.move(Int(id) ?? 0, to: QueuePlace(rawValue: place) ?? .top) {
        case .success(let moved):
            if json {
                TextOutput.standard.out(String(decoding: Wire.encode(moved), as: UTF8.self))
            } else {
                TextOutput.standard.out("\(moved.id) is number \(moved.position + 1) in the queue")
            }
            return 0
        case .failure(let failure):
            TextOutput.standard.err("haul: move: \(failure.error)")
            return FailureCategory.usage.exitCode
        }
    }
}

struct List: SessionVerb {
    static let configuration = CommandConfiguration(
        commandName: "ls", abstract: "Every download, oldest first: id, state, percent, done/total, speed, name.")
    @Flag(help: "One JSON array of objects.") var json = false

    func execute() async throws(HaulError) -> Int32 {
        let client = try await ServiceClient.connect(SessionCommands.directory)
        let downloads = try await client.list()
        // A queue that cannot be written lists as it is, and says so.
        if let problem = try? await client.status().store { TextOutput.standard.err("haul: \(problem)") }
        if json {
            TextOutput.standard.out(String(decoding: Wire.encode(downloads), as: UTF8.self))
        } else {
            for line in ListTable.lines(downloads) { TextOutput.standard.out(line) }
        }
        return 0
    }
}

/// `haul ls` as a table.
enum ListTable {
    static func lines(_ downloads: [Wire.Download]) -> [String] {
        let idWidth = max(2, downloads.map { String($0.id).count }.max() ?? 0)
        var lines = [pad("ID", idWidth, right: true) + "  " + pad("STATE", 11) + "  " + pad("DONE", 4, right: true)
                     + "  " + pad("BYTES", 21, right: true) + "  " + pad("SPEED", 11, right: true) + "  NAME"]
        for download in downloads {
            let percent = download.total.map { $0 > 0 ? "\(min(100, download.completed * 100 / $0))%" : "100%" } ?? "-"
            let bytes = ByteFormat.size(download.completed) + " / " + (download.total.map(ByteFormat.size) ?? "?")
            let speed = download.speed > 0 ? ByteFormat.rate(download.speed) : ""
            var name = download.name
            if let category = download.fileCategory { name += " [\(category)]" }
            if let sources = download.sources { name += " (\(sources.count) sources)" }
            if let error = download.error { name += " (\(error))" }
            if download.removedWithFiles == true { name += " (removed with files)" }
            lines.append(pad(String(download.id), idWidth, right: true) + "  " + pad(download.state, 11) + "  "
                         + pad(percent, 4, right: true) + "  " + pad(bytes, 21, right: true) + "  "
                         + pad(speed, 11, right: true) + "  " + name)
        }
        return lines
    }

    private static func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let gap = String(repeating: " ", count: max(0, width - text.count))
        return right ? gap + text : text + gap
    }
}
