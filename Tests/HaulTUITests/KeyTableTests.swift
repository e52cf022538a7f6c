import Foundation
import Testing
@testable import HaulTUI

/// The key table is the one source for `update`, the footer, the help and docs/keys.md: these hold it to that.
@Suite struct KeyTableTests {
    @Test func noKeyMeansTwoThingsInOneView() {
        for view in [AppState.View.downloads, .files] {
            var seen: [Key: Command] = [:]
            for binding in KeyBindings.all where binding.applies(in: view) {
                for key in binding.keys {
                    #expect(seen[key] == nil, "\(key) in \(view): \(seen[key].map { "\($0)" } ?? "") and \(binding.command)")
                    seen[key] = binding.command
                }
            }
        }
    }

    @Test func everyCommandHasAKeyAndTheHelpNamesIt() {
        let context = KeyBinding.Context()
        let helped = [KeyBinding.Scope.downloads, .files, .everywhere].flatMap { KeyBindings.help(for: $0, context: context) }
        for binding in KeyBindings.all {
            #expect(!binding.keys.isEmpty)
            // Every key's spelling stands in some help line's keys (so no binding is secret).
            // Left out: the arrows (a glyph), and the keys the help lists in words ("PgUp PgDn Home End, g G too").
            let inWords: Set<Key> = [.up, .down, .backTab, .pageUp, .pageDown, .home, .end, .character("="), .character("g"),
                                     .character("G")]
            for key in binding.keys where !inWords.contains(key) {
                let spelled = Self.spelling(key)
                #expect(helped.contains { $0.keys.split(separator: " ").contains(Substring(spelled)) }, "\(spelled) not in the help")
            }
        }
    }

    @Test func docsKeysListsExactlyTheTableKeys() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let doc = try String(contentsOf: root.appendingPathComponent("docs/keys.md"), encoding: .utf8)
        let section = try #require(doc.components(separatedBy: "## Keys\n").dropFirst().first)
        let rows = section.split(separator: "\n").drop { !$0.hasPrefix("|") }.prefix { $0.hasPrefix("|") }.dropFirst(2)
        var documented: Set<String> = []
        for row in rows {
            let cell = row.split(separator: "|", omittingEmptySubsequences: true).first ?? ""
            for token in cell.split(whereSeparator: { " /,()".contains($0) }) { documented.insert(String(token)) }
            // A slash separates keys, except in the row of the `/` key itself.
            if cell.trimmingCharacters(in: .whitespaces) == "/" { documented.insert("/") }
        }
        let bound = Set(KeyBindings.all.flatMap(\.keys).map(Self.spelling))
        // Esc closes boxes: the boxes' own keys, not the views'.
        #expect(bound.subtracting(documented).isEmpty, "bound, not in docs/keys.md: \(bound.subtracting(documented).sorted())")
        #expect(documented.subtracting(bound).subtracting(["Esc"]).isEmpty,
                "in docs/keys.md, not bound: \(documented.subtracting(bound).subtracting(["Esc"]).sorted())")
    }

    @Test func theFooterFollowsTheTable() {
        var state = AppState(size: Size(columns: 200, rows: 10))
        state.view = .files
        let files = Footer.hints(state, glyphs: .ascii).map(\.0)
        #expect(files == ["?", "q", "Enter", "m", "C", "a", "Tab", "r", "Up/Dn"])
        state.view = .downloads
        state.attached = true
        let downloads = Footer.hints(state, glyphs: .ascii)
        #expect(downloads.map(\.0) == ["?", "q", "c", "C", "p", "a", "Tab", "r", "d", "Enter", "Up/Dn"])
        #expect(downloads[1].1 == "detach")
        #expect(downloads[6].1 == "files")
    }

    /// How docs/keys.md spells a key.
    static func spelling(_ key: Key) -> String {
        switch key {
        case .character(" "): "Space"
        case .character(let c): String(c)
        case .up: "Up"
        case .down: "Down"
        case .left: "Left"
        case .right: "Right"
        case .pageUp: "PgUp"
        case .pageDown: "PgDn"
        case .home: "Home"
        case .end: "End"
        case .enter: "Enter"
        case .tab: "Tab"
        case .backTab: "Shift-Tab"
        case .escape: "Esc"
        case .backspace: "Backspace"
        case .delete: "Delete"
        case .interrupt: "Ctrl-C"
        }
    }
}
