/// What a key asks for in a view. `update` carries commands out; which keys give which command, and how the
/// footer and the help name them, is the one table `KeyBindings.all`.
enum Command: Sendable, Equatable {
    // Everywhere
    case help, switchView, add, cancelAll, raiseLimit, lowerLimit, quit
    case up, down, pageUp, pageDown, first, last
    // Downloads view
    case details, cancel, pause, pauseAll, retry, refresh, remove, removeFiles, open, openFolder, picture
    case moveUp, moveDown, moveTop, moveBottom, sort, filter
    // Files view
    case download, downloadInParts, reload
}

/// One row of the key table.
struct KeyBinding: Sendable {
    enum Scope: Sendable, Equatable {
        case everywhere, downloads, files
    }

    /// What the texts may depend on.
    struct Context: Sendable {
        var view = AppState.View.downloads
        var attached = false
        var multiPartSegments = 4
        var upDown = "↑↓"
    }

    let command: Command
    let scope: Scope
    let keys: [Key]
    /// The keys as the help spells them; nil for a key listed with another (the other moves of the selection).
    let label: (@Sendable (Context) -> String)?
    /// The help line.
    let help: @Sendable (Context) -> String
    /// The footer's word; nil keeps the binding out of the footer.
    let hint: (@Sendable (Context) -> String)?
    /// The footer's key, when not the label's first.
    let hintKey: (@Sendable (Context) -> String)?
    /// The footer shows as many as fit, lowest rank first.
    let hintRank: Int

    init(_ command: Command, _ scope: Scope, _ keys: [Key], label: (@Sendable (Context) -> String)?,
         help: @escaping @Sendable (Context) -> String, hint: (@Sendable (Context) -> String)? = nil,
         hintKey: (@Sendable (Context) -> String)? = nil, rank: Int = .max) {
        self.command = command
        self.scope = scope
        self.keys = keys
        self.label = label
        self.help = help
        self.hint = hint
        self.hintKey = hintKey
        self.hintRank = rank
    }

    init(_ command: Command, _ scope: Scope, _ keys: [Key], _ label: String, _ help: String, hint: String? = nil,
         rank: Int = .max) {
        var hintText: (@Sendable (Context) -> String)?
        if let hint { hintText = { _ in hint } }
        self.init(command, scope, keys, label: { _ in label }, help: { _ in help }, hint: hintText, rank: rank)
    }

    func applies(in view: AppState.View) -> Bool {
        switch scope {
        case .everywhere: true
        case .downloads: view == .downloads
        case .files: view == .files
        }
    }
}

enum KeyBindings {
    static let all: [KeyBinding] = [
        // Everywhere
        KeyBinding(.up, .everywhere, [.up, .character("k")], label: { "\($0.upDown) k j" },
                   help: { _ in "select (PgUp PgDn Home End, g G too)" }, hint: { _ in "select" }, hintKey: { $0.upDown },
                   rank: 90),
        KeyBinding(.down, .everywhere, [.down, .character("j")], label: nil, help: { _ in "" }),
        KeyBinding(.pageUp, .everywhere, [.pageUp], label: nil, help: { _ in "" }),
        KeyBinding(.pageDown, .everywhere, [.pageDown], label: nil, help: { _ in "" }),
        KeyBinding(.first, .everywhere, [.home, .character("g")], label: nil, help: { _ in "" }),
        KeyBinding(.last, .everywhere, [.end, .character("G")], label: nil, help: { _ in "" }),
        KeyBinding(.cancelAll, .everywhere, [.character("C")], "C", "Cancel All: every download and the clock",
                   hint: "cancel all", rank: 3),
        KeyBinding(.add, .everywhere, [.character("a")], "a", "add a URL", hint: "add", rank: 5),
        KeyBinding(.switchView, .everywhere, [.tab, .backTab], label: { _ in "Tab ?" },
                   help: { _ in "switch between downloads and files / this help" },
                   hint: { $0.view == .downloads ? "files" : "downloads" }, rank: 6),
        KeyBinding(.raiseLimit, .everywhere, [.character("+"), .character("=")], "+ -",
                   "raise / lower the rate cap (in details: its own)"),
        KeyBinding(.lowerLimit, .everywhere, [.character("-")], label: nil, help: { _ in "" }),
        KeyBinding(.quit, .everywhere, [.character("q")], label: { _ in "q" },
                   help: { $0.attached ? "detach; while downloads run, asks: keep going or pause"
                       : "quit; while downloads run, asks, then pauses them" },
                   hint: { $0.attached ? "detach" : "quit" }, rank: 1),
        KeyBinding(.help, .everywhere, [.character("?")], label: nil, help: { _ in "" }, hint: { _ in "help" },
                   hintKey: { _ in "?" }, rank: 0),
        // Downloads view
        KeyBinding(.details, .downloads, [.enter], "Enter", "details of the selected download", hint: "details", rank: 20),
        KeyBinding(.cancel, .downloads, [.character("c")], "c", "cancel the selected download (.part kept)",
                   hint: "cancel", rank: 2),
        KeyBinding(.pause, .downloads, [.character("p"), .character(" ")], "p Space P",
                   "pause / resume the selected download / all", hint: "pause", rank: 4),
        KeyBinding(.pauseAll, .downloads, [.character("P")], label: nil, help: { _ in "" }),
        KeyBinding(.retry, .downloads, [.character("r")], "r", "retry a failed or cancelled download", hint: "retry",
                   rank: 7),
        KeyBinding(.refresh, .downloads, [.character("u")], "u",
                   "new address for a paused or failed download"),
        KeyBinding(.remove, .downloads, [.character("d"), .delete], "d Delete", "remove a finished row (files stay)",
                   hint: "remove", rank: 8),
        KeyBinding(.removeFiles, .downloads, [.character("D")], "D",
                   "delete the selected download's files (asks first)"),
        KeyBinding(.moveUp, .downloads, [.character("K")], "K J T B",
                   "move in the queue: up / down / to the top / bottom"),
        KeyBinding(.moveDown, .downloads, [.character("J")], label: nil, help: { _ in "" }),
        KeyBinding(.moveTop, .downloads, [.character("T")], label: nil, help: { _ in "" }),
        KeyBinding(.moveBottom, .downloads, [.character("B")], label: nil, help: { _ in "" }),
        KeyBinding(.sort, .downloads, [.character("s")], "s",
                   "sort: queue, added, finished, name, size, %, speed"),
        KeyBinding(.filter, .downloads, [.character("/")], "/", "filter by name (Enter keeps it, Esc clears it)"),
        KeyBinding(.picture, .downloads, [.character("v")], "v", "show the selected JPEG (live while it downloads)"),
        KeyBinding(.open, .downloads, [.character("o")], "o O", "open the finished file / its folder (xdg-open)"),
        KeyBinding(.openFolder, .downloads, [.character("O")], label: nil, help: { _ in "" }),
        // Files view
        KeyBinding(.download, .files, [.enter], "Enter", "download the selected file, 1 connection", hint: "download",
                   rank: 2),
        KeyBinding(.downloadInParts, .files, [.character("m")], label: { _ in "m" },
                   help: { "download it in \($0.multiPartSegments) parts at once" }, hint: { _ in "multi-part" }, rank: 2),
        KeyBinding(.reload, .files, [.character("r")], "r", "reload the list", hint: "reload", rank: 7),
    ]

    /// The command `key` gives in `view`, if any.
    static func command(for key: Key, in view: AppState.View) -> Command? {
        all.first { $0.applies(in: view) && $0.keys.contains(key) }?.command
    }

    /// The footer's hints for `view`, most important first.
    static func hints(_ context: KeyBinding.Context) -> [(key: String, action: String)] {
        all.enumerated()
            .filter { $0.element.applies(in: context.view) && $0.element.hint != nil }
            .sorted { ($0.element.hintRank, $0.offset) < ($1.element.hintRank, $1.offset) }
            .compactMap { _, binding in
                guard let hint = binding.hint?(context) else { return nil }
                // The footer names one key: the label's first.
                let first = binding.label?(context).split(separator: " ").first.map(String.init) ?? ""
                return (binding.hintKey?(context) ?? first, hint)
            }
    }

    /// The help's lines: the keys of one scope, as (keys, what they do).
    static func help(for scope: KeyBinding.Scope, context: KeyBinding.Context) -> [(keys: String, action: String)] {
        all.filter { $0.scope == scope }.compactMap { binding in
            binding.label.map { ($0(context), binding.help(context)) }
        }
    }
}

extension AppState {
    /// What the key table's texts need to know of this state.
    func keyContext(_ glyphs: Glyphs) -> KeyBinding.Context {
        KeyBinding.Context(view: view, attached: attached, multiPartSegments: multiPartSegments, upDown: glyphs.upDown)
    }
}
