import HaulCore
import TOMLKit

/// `[categories.NAME]` tables: where downloads go by their final name's extension or their media type.
///
///     [categories.video]
///     extensions = ["mp4", "mkv", "webm"]
///     media-types = ["video/*"]
///     dir = "~/Videos"
///
/// Each becomes a hidden `--category-rule` argument of the download commands and of the service (in the
/// file's order: the first category that matches wins), checked here so that a bad one is one line naming
/// the file, the line and the key, as for the other keys.
extension ConfigFile {
    /// The keys a category's table takes.
    static let categoryKeys: Set<String> = ["extensions", "media-types", "dir"]

    /// The entry of the `categories` key, whose value is `value`.
    static func categoryEntry(_ value: any TOMLValueConvertible, text: String, path: String, home: String)
        throws(Problem) -> Entry
    {
        let start = line(of: "categories", in: text) ?? 0
        guard let table = value.table else {
            throw Problem(message: "\(path):\(start): categories: a table of categories ([categories.NAME])")
        }
        var rules: [(line: Int, rule: CategoryRule)] = []
        for name in table.keys {
            let at = categoryLine(name, in: text) ?? start
            func problem(_ key: String?, _ message: String) -> Problem {
                Problem(message: "\(path):\(at): categories.\(name)\(key.map { "." + $0 } ?? ""): \(message)")
            }
            guard let category = table[name]?.table else {
                throw problem(nil, "a table with extensions, media-types and dir ([categories.\(name)])")
            }
            if name == CategoryRules.none || name.isEmpty || name.contains(where: { $0.isWhitespace || $0.isNewline }) {
                throw problem(nil, "not a name for a category (\"none\" turns them off; no spaces)")
            }
            for key in category.keys where !categoryKeys.contains(key) {
                throw problem(key, "unknown key (a category takes extensions, media-types and dir)")
            }
            let extensions = try strings(category["extensions"]) { problem("extensions", $0) }
            let mediaTypes = try strings(category["media-types"]) { problem("media-types", $0) }
            for ext in extensions {
                if let why = CategoryRule.problem(withExtension: ext) { throw problem("extensions", why) }
            }
            for type in mediaTypes {
                if let why = CategoryRule.problem(withMediaType: type) { throw problem("media-types", why) }
            }
            guard let dirValue = category["dir"] else { throw problem("dir", "missing: the folder of its downloads") }
            guard let dir = dirValue.string else { throw problem("dir", "takes a string, not \(dirValue.type)") }
            guard !dir.isEmpty else { throw problem("dir", "empty: name the folder of its downloads") }
            if extensions.isEmpty && mediaTypes.isEmpty {
                throw problem(nil, "lists neither extensions nor media-types: nothing would go there")
            }
            rules.append((at, CategoryRule(name: name, extensions: extensions, mediaTypes: mediaTypes,
                                           directory: expandCategoryDirectory(dir, home: home))))
        }
        let ordered = rules.enumerated().sorted { ($0.element.line, $0.offset) < ($1.element.line, $1.offset) }
        return Entry(key: "categories", line: rules.map(\.line).min() ?? start, arguments: ordered.map { CategorySettings.argument($0.element.rule) },
                     scopes: [.download, .service])
    }

    /// A list of strings (or one string), or the problem `problem` words.
    private static func strings(_ value: (any TOMLValueConvertible)?, _ problem: (String) -> Problem)
        throws(Problem) -> [String]
    {
        guard let value else { return [] }
        if let one = value.string { return [one] }
        guard let array = value.array else { throw problem("takes a list of strings, not \(value.type)") }
        var found: [String] = []
        for item in array {
            guard let string = item.string else { throw problem("takes a list of strings, not one with \(item.type)") }
            found.append(string)
        }
        return found
    }

    /// `~`, `~/x`, `$HOME` and `${HOME}` at the start are the home directory; any other relative path stays
    /// relative: it is taken from the download's output directory (`CategoryRule.directory(from:)`).
    static func expandCategoryDirectory(_ path: String, home: String) -> String {
        for prefix in ["$HOME", "${HOME}"] where path == prefix || path.hasPrefix(prefix + "/") {
            return home + path.dropFirst(prefix.count)
        }
        if path == "~" || path.hasPrefix("~/") { return expand(path, home: home) }
        return path
    }

    /// The line (from 1) where category `name` is set: its `[categories.NAME]` header, a dotted
    /// `categories.NAME...` key, or a `NAME = {...}` under `[categories]`; nil if it cannot be found.
    static func categoryLine(_ name: String, in text: String) -> Int? {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let spellings = [name, "\"\(name)\"", "'\(name)'"]
        let trimmed = lines.map { $0.drop { $0 == " " || $0 == "\t" } }
        for (index, line) in trimmed.enumerated() {
            for spelling in spellings {
                for prefix in ["[categories.\(spelling)]", "categories.\(spelling).", "categories.\(spelling) "] {
                    if line.hasPrefix(prefix) { return index + 1 }
                }
            }
        }
        var inCategories = false
        for (index, line) in trimmed.enumerated() {
            if line.hasPrefix("[") { inCategories = line.hasPrefix("[categories]") }
            guard inCategories else { continue }
            for spelling in spellings where line.hasPrefix(spelling) {
                let rest = line.dropFirst(spelling.count).drop { $0 == " " || $0 == "\t" }
                if rest.first == "=" || rest.first == "." { return index + 1 }
            }
        }
        return nil
    }
}
