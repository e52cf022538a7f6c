/// One `[categories.NAME]` table of the config file: the final names (by extension) and the media types (by
/// the answer's `Content-Type`) whose downloads go to `directory`.
package struct CategoryRule: Sendable, Equatable, Codable {
    package var name: String
    /// Lower case, without the leading dot: `mp4`, `tar.gz`.
    package var extensions: [String]
    /// Lower case: `video/mp4`, or a whole type `video/*`.
    package var mediaTypes: [String]
    /// `~` and `$HOME` already expanded where the config was read; a relative one is taken from the download's
    /// own (default) output directory (`directory(from:)`).
    package var directory: String

    package init(name: String, extensions: [String] = [], mediaTypes: [String] = [], directory: String) {
        self.name = name
        self.extensions = extensions.map(Self.normalizedExtension)
        self.mediaTypes = mediaTypes.map { $0.lowercased() }
        self.directory = directory
    }

    /// `.MP4` and `mp4` alike: lower case, no leading dot.
    static func normalizedExtension(_ text: String) -> String {
        let lower = text.lowercased()
        return lower.hasPrefix(".") ? String(lower.dropFirst()) : lower
    }

    /// Why `text` cannot be an extension of a rule; nil when it can.
    package static func problem(withExtension text: String) -> String? {
        let ext = normalizedExtension(text)
        if ext.isEmpty { return "an empty extension" }
        if ext.contains("/") || ext.hasPrefix(".") || ext.hasSuffix(".") || ext.contains("..") {
            return "\(text.debugDescription) is not an extension (like \"mp4\" or \"tar.gz\")"
        }
        return nil
    }

    /// Why `text` cannot be a media type of a rule; nil when it can: `type/subtype` or `type/*`.
    package static func problem(withMediaType text: String) -> String? {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        let token = { (part: Substring) in
            !part.isEmpty && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "!#$&^_.+-".contains($0)) }
        }
        guard parts.count == 2, token(parts[0]), parts[1] == "*" || token(parts[1]) else {
            return "\(text.debugDescription) is not a media type (like \"video/mp4\" or \"video/*\")"
        }
        return nil
    }

    /// Where its downloads go, for a download whose output directory (the default one) is `base`.
    package func directory(from base: String) -> String {
        directory.hasPrefix("/") ? directory : FilePath.join(base, directory)
    }
}

/// The categories of the config file, in its order: which folder a download goes to by its final name and
/// media type. Off (no rule) until configured.
package struct CategoryRules: Sendable, Equatable, Codable {
    package var rules: [CategoryRule]

    /// The name a job gives (`--category none`) to keep the categories off for it.
    package static let none = "none"

    package init(_ rules: [CategoryRule] = []) {
        self.rules = rules
    }

    package var isEmpty: Bool { rules.isEmpty }

    package func rule(named name: String) -> CategoryRule? {
        rules.first { $0.name == name }
    }

    /// The category of a file named `name` whose server called it `mediaType` (a `Content-Type` value, its
    /// parameters ignored; nil before the answer): the first rule, in the file's order, that lists the name's
    /// extension; else the first whose media types take it. An extension says what the file is more surely
    /// than a server's type (`application/octet-stream` for everything, `text/plain` for a script), so
    /// extension rules go first. Of one rule's extensions the longest matching one counts, so that
    /// `x.tar.gz` is an archive's even when another rule lists `gz`: every rule is asked with the longest
    /// extension the name has first (`tar.gz`), then the shorter (`gz`).
    package func category(forName name: String, mediaType: String?) -> CategoryRule? {
        let lower = name.lowercased()
        for ext in Self.extensions(of: lower) {
            if let rule = rules.first(where: { $0.extensions.contains(ext) }) { return rule }
        }
        guard let mediaType = mediaType.flatMap(Self.essence) else { return nil }
        let whole = mediaType.split(separator: "/").first.map { "\($0)/*" }
        return rules.first { $0.mediaTypes.contains(mediaType) || (whole.map($0.mediaTypes.contains) ?? false) }
    }

    /// The extensions of a lower-case `name`, longest first: `a.tar.gz` -> `tar.gz`, `gz`. A leading dot (a
    /// hidden file's) starts no extension.
    static func extensions(of name: String) -> [String] {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count > 1 else { return [] }
        var found: [String] = []
        for start in 1..<parts.count where !(start == 1 && parts[0].isEmpty && parts.count == 2) {
            let ext = parts[start...].joined(separator: ".")
            if !ext.isEmpty && !parts[start].isEmpty { found.append(ext) }
        }
        return found
    }

    /// `Video/MP4; codecs=x` -> `video/mp4`; nil when it is not `type/subtype`.
    static func essence(_ contentType: String) -> String? {
        let value = contentType.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
        let trimmed = value.trimmingSpaces().lowercased()
        let parts = trimmed.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return nil }
        return trimmed
    }

    /// Where a download goes and under which category: `requested` is its job's `category` (nil: by the rules;
    /// `none`: off; a name: that one), `name` and `mediaType` what is known of the file so far, `base` its
    /// output directory. nil: no category (it stays in `base`). A requested name the rules do not have is
    /// none (the config changed since it was asked for).
    package func placement(requested: String?, name: String, mediaType: String?, base: String)
        -> (category: String, directory: String)?
    {
        let rule: CategoryRule?
        switch requested {
        case .some(Self.none): rule = nil
        case .some(let named): rule = self.rule(named: named)
        case .none: rule = category(forName: name, mediaType: mediaType)
        }
        return rule.map { ($0.name, $0.directory(from: base)) }
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
