/// Fitting text into columns, by display width (wide characters count 2).
enum Text {
    /// `text` cut to at most `width` columns, ending in `ellipsis` when something was cut.
    static func truncated(_ text: String, to width: Int, ellipsis: String = "…") -> String {
        guard width > 0 else { return "" }
        if DisplayWidth.of(text) <= width { return text }
        let room = width - DisplayWidth.of(ellipsis)
        guard room > 0 else { return prefix(text, columns: width) }
        return prefix(text, columns: room) + ellipsis
    }

    /// `text` cut in the middle to at most `width` columns, so both the start and the end (the extension)
    /// of a long file name stay visible.
    static func truncatedMiddle(_ text: String, to width: Int, ellipsis: String = "…") -> String {
        guard width > 0 else { return "" }
        if DisplayWidth.of(text) <= width { return text }
        let room = width - DisplayWidth.of(ellipsis)
        guard room >= 12 else { return truncated(text, to: width, ellipsis: ellipsis) }
        let tail = suffix(text, columns: room / 3)
        let head = prefix(text, columns: room - DisplayWidth.of(tail))
        return head + ellipsis + tail
    }

    /// The longest start of `text` that takes at most `columns` columns.
    static func prefix(_ text: String, columns: Int) -> String {
        var used = 0
        var result = ""
        for character in text {
            let width = DisplayWidth.of(character)
            if used + width > columns { break }
            used += width
            result.append(character)
        }
        return result
    }

    /// The longest end of `text` that takes at most `columns` columns.
    static func suffix(_ text: String, columns: Int) -> String {
        var used = 0
        var result: [Character] = []
        for character in text.reversed() {
            let width = DisplayWidth.of(character)
            if used + width > columns { break }
            used += width
            result.append(character)
        }
        return String(result.reversed())
    }

    /// `text` right-aligned in `width` columns (truncated when longer).
    static func right(_ text: String, _ width: Int) -> String {
        let cut = truncated(text, to: width)
        return String(repeating: " ", count: max(0, width - DisplayWidth.of(cut))) + cut
    }

    /// `text` left-aligned in `width` columns (truncated when longer).
    static func left(_ text: String, _ width: Int) -> String {
        let cut = truncated(text, to: width)
        return cut + String(repeating: " ", count: max(0, width - DisplayWidth.of(cut)))
    }
}
