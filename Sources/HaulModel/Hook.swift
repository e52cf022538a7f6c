/// A command run when a download ends (`--on-complete`, `--on-error`).
///
/// Without a shell: the command is split into words the way a shell would split a simple command (blanks
/// separate words; '...' and "..." quote; a backslash escapes the next character), and nothing else a shell
/// does happens, so a file name in the environment can never become code. `shell` runs it with `/bin/sh -c`.
package struct Hook: Sendable, Equatable, Codable {
    package var command: String
    var shell: Bool

    package init(command: String, shell: Bool = false) {
        self.command = command
        self.shell = shell
    }

    /// The program and its arguments; nil when the quoting does not close or there is no word.
    package var argv: [String]? {
        if shell { return ["/bin/sh", "-c", command] }
        guard let words = Self.words(command), !words.isEmpty else { return nil }
        return words
    }

    /// Splits `text` into words as described above; nil on an unclosed quote or a trailing backslash.
    static func words(_ text: String) -> [String]? {
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for character in text {
            if escaped {
                current.append(character)
                escaped = false
                continue
            }
            if let open = quote {
                if character == open {
                    quote = nil
                } else if character == "\\" && open == "\"" {
                    escaped = true
                } else {
                    current.append(character)
                }
                continue
            }
            switch character {
            case " ", "\t", "\n":
                if inWord { words.append(current) }
                current = ""
                inWord = false
            case "'", "\"":
                quote = character
                inWord = true
            case "\\":
                escaped = true
                inWord = true
            default:
                current.append(character)
                inWord = true
            }
        }
        guard quote == nil, !escaped else { return nil }
        if inWord { words.append(current) }
        return words
    }
}
