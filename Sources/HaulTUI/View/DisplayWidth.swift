/// How many terminal columns text takes, decided without the C library (whose answer depends on the locale).
///
/// A grapheme cluster is shown as its first scalar plus the combining marks after it; joiners, variation
/// selectors and emoji modifiers are dropped, so the width of what is drawn is always the width computed
/// here (0, 1 or 2 columns) and a name can never push the layout sideways.
enum DisplayWidth {
    /// Columns taken by one scalar: 0 for combining marks and format characters, 2 for East Asian wide and
    /// emoji-presentation characters, 1 otherwise. Control characters count 1: they are drawn as `?`.
    static func of(_ scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value < 0x300 { return 1 }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if isWide(value) || scalar.properties.isEmojiPresentation { return 2 }
        return 1
    }

    /// Columns taken by `text` once made printable.
    static func of(_ text: String) -> Int {
        var total = 0
        for character in text { total += of(character) }
        return total
    }

    /// Columns taken by one character once made printable (0 when nothing of it is drawn).
    static func of(_ character: Character) -> Int {
        printable(character)?.unicodeScalars.first.map { of($0) } ?? 0
    }

    /// What is drawn for `character`: control characters become `?`, a cluster keeps its first scalar and
    /// the combining marks that follow it; nil when nothing visible remains (a lone format character).
    static func printable(_ character: Character) -> String? {
        var scalars = character.unicodeScalars.makeIterator()
        guard let first = scalars.next() else { return nil }
        if isControl(first) { return "?" }
        let firstWidth = of(first)
        if firstWidth == 0 {
            return first.properties.generalCategory == .format ? nil : "?"
        }
        var kept = String.UnicodeScalarView()
        kept.append(first)
        var marks = 0
        while let next = scalars.next(), marks < 4 {
            let category = next.properties.generalCategory
            guard category == .nonspacingMark || category == .enclosingMark else { continue }
            kept.append(next)
            marks += 1
        }
        return String(kept)
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
            || scalar.properties.generalCategory == .control
            || (0xD800...0xDFFF).contains(scalar.value)
    }

    /// East Asian Wide and Fullwidth blocks (Unicode 15), the ones file names actually use. Emoji are
    /// covered by `isEmojiPresentation`, which matches their East Asian Width exactly.
    private static func isWide(_ value: UInt32) -> Bool {
        switch value {
        case 0x1100...0x115F, 0x2329...0x232A, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF,
            0x4E00...0x9FFF, 0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3, 0xF900...0xFAFF,
            0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x16FE0...0x16FE4,
            0x17000...0x18AFF, 0x1B000...0x1B16F, 0x1F200...0x1F2FF,
            0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return true
        default:
            return false
        }
    }
}
