/// curl's URL globbing: one pattern given on the command line stands for a numbered series of URLs.
///
/// `[1-100]` counts, `[001-100]` counts zero-padded to the width of its first number, `[a-z]` goes through
/// letters, `[1-100:5]` and `[a-z:2]` step, `{one,two,three}` lists; several in one URL give every
/// combination, the last one varying fastest (curl's order). `\[`, `\]`, `\{` and `\}` are those characters
/// themselves (the backslash is dropped); a backslash before anything else stays. `[]` is kept as it is, and so
/// is a bracket right after `//` holding a `:`: an IPv6 literal host (`http://[::1]:8080/`), which curl
/// takes as a host too. A `]` or `}` that closes nothing is an error, as is a nested brace.
///
/// The series is a `RandomAccessCollection` computed on demand: a pattern's size is known from its ranges,
/// and one larger than `limit` (`[1-1000000000]`) is refused when it is read, before any URL is made.
/// Each URL comes with the values its globs took, which `name(_:values:)` puts in for `#1`, `#2`... (curl's
/// `-o "#1.jpg"`).
package struct URLGlob: RandomAccessCollection, Sendable, Equatable {
    /// The most URLs one pattern may give.
    package static let maxURLs = 100_000
    /// The most globs one pattern may hold (curl's limit too).
    package static let maxGlobs = 100

    /// One URL of the series, and the value each glob took, in the order of the globs.
    package struct Expansion: Sendable, Equatable {
        package var url: String
        package var values: [String]
    }

    /// Why a pattern is refused: one line.
    package struct Problem: Error, Sendable, Equatable {
        package let message: String
    }

    /// A piece of the pattern: text as it is, or a glob with `count` values.
    enum Part: Sendable, Equatable {
        case text(String)
        case list([String])
        /// `first`, `first + step`... up to `last`, at least `width` digits (zero-padded).
        case numbers(first: UInt64, step: UInt64, count: Int, width: Int)
        /// Letters from `first` by `step`.
        case letters(first: UInt8, step: UInt8, count: Int)

        var count: Int {
            switch self {
            case .text: 1
            case .list(let values): values.count
            case .numbers(_, _, let count, _), .letters(_, _, let count): count
            }
        }

        func value(_ index: Int) -> String {
            switch self {
            case .text(let text): return text
            case .list(let values): return values[index]
            case .numbers(let first, let step, _, let width):
                let digits = String(first + UInt64(index) * step)
                return digits.count < width ? String(repeating: "0", count: width - digits.count) + digits : digits
            case .letters(let first, let step, _):
                return String(UnicodeScalar(first + UInt8(index) * step))
            }
        }
    }

    let parts: [Part]
    /// How many URLs the pattern gives (at most the `limit` it was read with).
    package let count: Int
    /// How many globs (lists and ranges) it holds: the `#N` a name may refer to.
    package let globs: Int

    package var startIndex: Int { 0 }
    package var endIndex: Int { count }

    /// Whether `url` holds anything globbing reads (`[`, `]`, `{`, `}` or `\`): a URL without any is its own
    /// series of one, and needs no parse.
    package static func mayGlob(_ url: String) -> Bool {
        url.utf8.contains { $0 == 0x5B || $0 == 0x5D || $0 == 0x7B || $0 == 0x7D || $0 == 0x5C }
    }

    /// Reads `pattern`; refuses one that is malformed or gives more than `limit` URLs (saying how many).
    package init(_ pattern: String, limit: Int = URLGlob.maxURLs) throws(Problem) {
        var reader = Reader(Array(pattern.utf8))
        parts = try reader.parts()
        globs = parts.reduce(0) { if case .text = $1 { $0 } else { $0 + 1 } }
        if globs > Self.maxGlobs { throw Problem(message: "more than \(Self.maxGlobs) globs ([...] or {...}) in one URL") }
        var total = 1
        var overflow = false
        for part in parts {
            let (product, overflowed) = total.multipliedReportingOverflow(by: part.count)
            overflow = overflow || overflowed
            total = overflowed ? Int.max : product
        }
        if overflow || total > limit {
            let how = overflow ? "more than \(Int.max)" : String(total)
            throw Problem(message: "expands to \(how) URLs, more than the \(limit) one pattern may give"
                          + " (-g turns globbing off)")
        }
        count = total
    }

    /// The URL at `position` and its globs' values: the last glob varies fastest, as curl counts.
    package subscript(position: Int) -> Expansion {
        precondition(position >= 0 && position < count, "a URL past the series")
        var rest = position
        var pieces = [String](repeating: "", count: parts.count)
        var values = [String](repeating: "", count: globs)
        var glob = globs
        for (index, part) in parts.enumerated().reversed() {
            if case .text(let text) = part {
                pieces[index] = text
                continue
            }
            glob -= 1
            let value = part.value(rest % part.count)
            rest /= part.count
            pieces[index] = value
            values[glob] = value
        }
        return Expansion(url: pieces.joined(), values: values)
    }

    /// `template` with each `#N` (N from 1 to the number of values) replaced by the Nth glob's value, as curl
    /// names files; a `#` followed by anything else, or by a number with no glob, stays as it is.
    package static func name(_ template: String, values: [String]) -> String {
        guard template.utf8.contains(UInt8(ascii: "#")) else { return template }
        let bytes = Array(template.utf8)
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            guard byte == UInt8(ascii: "#") else {
                result.append(byte)
                continue
            }
            var end = index
            var number = 0
            while end < bytes.count, let digit = Self.digit(bytes[end]), number <= values.count {
                number = number * 10 + digit
                end += 1
            }
            if end > index, number >= 1, number <= values.count {
                result += Array(values[number - 1].utf8)
                index = end
            } else {
                result.append(byte)
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// Whether `template` takes a value of the series: it holds a `#N` for one of `globs` globs.
    package static func usesValues(_ template: String, globs: Int) -> Bool {
        let marks = (0..<globs).map { "\u{1}\($0)\u{1}" }
        return name(template, values: marks) != template
    }

    static func digit(_ byte: UInt8) -> Int? {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") ? Int(byte - UInt8(ascii: "0")) : nil
    }
}

extension URLGlob {
    /// Reads a pattern's bytes into parts, as curl's `glob_parse` does.
    struct Reader {
        let bytes: [UInt8]
        var at = 0

        init(_ bytes: [UInt8]) {
            self.bytes = bytes
        }

        mutating func parts() throws(Problem) -> [Part] {
            var parts: [Part] = []
            var text: [UInt8] = []
            while at < bytes.count {
                let byte = bytes[at]
                switch byte {
                case UInt8(ascii: "{"):
                    if !text.isEmpty { parts.append(.text(String(decoding: text, as: UTF8.self))) }
                    text = []
                    parts.append(try list())
                    continue
                case UInt8(ascii: "["):
                    if let host = literalBracket() {
                        text += host
                        continue
                    }
                    if !text.isEmpty { parts.append(.text(String(decoding: text, as: UTF8.self))) }
                    text = []
                    parts.append(try range())
                    continue
                case UInt8(ascii: "]"), UInt8(ascii: "}"):
                    throw problem("unmatched close brace/bracket", at: at)
                case UInt8(ascii: "\\") where at + 1 < bytes.count && Self.isSpecial(bytes[at + 1]):
                    text.append(bytes[at + 1])
                    at += 2
                    continue
                default:
                    text.append(byte)
                }
                at += 1
            }
            if !text.isEmpty || parts.isEmpty { parts.append(.text(String(decoding: text, as: UTF8.self))) }
            return parts
        }

        static func isSpecial(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: "[") || byte == UInt8(ascii: "]") || byte == UInt8(ascii: "{") || byte == UInt8(ascii: "}")
        }

        func problem(_ what: String, at position: Int) -> Problem {
            Problem(message: "\(what) at character \(position + 1) of the URL")
        }

        /// The bytes of a bracket that is no glob, taken whole: `[]`, and an IPv6 literal host (right after
        /// `//`, holding a `:` before its `]`). nil for a range.
        mutating func literalBracket() -> [UInt8]? {
            if at + 1 < bytes.count, bytes[at + 1] == UInt8(ascii: "]") {
                at += 2
                return Array("[]".utf8)
            }
            guard at >= 2, bytes[at - 1] == UInt8(ascii: "/"), bytes[at - 2] == UInt8(ascii: "/"),
                let close = bytes[at...].firstIndex(of: UInt8(ascii: "]")),
                bytes[at..<close].contains(UInt8(ascii: ":"))
            else { return nil }
            defer { at = close + 1 }
            return Array(bytes[at...close])
        }

        /// `{a,b,c}`: its values, a backslash taking the next byte as it is (as curl's `glob_set`).
        mutating func list() throws(Problem) -> Part {
            let open = at
            at += 1
            var values: [String] = []
            var value: [UInt8] = []
            while at < bytes.count {
                let byte = bytes[at]
                switch byte {
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    throw problem("nested brace", at: at)
                case UInt8(ascii: "]"):
                    throw problem("unexpected close bracket", at: at)
                case UInt8(ascii: ","), UInt8(ascii: "}"):
                    values.append(String(decoding: value, as: UTF8.self))
                    value = []
                    if byte == UInt8(ascii: "}") {
                        at += 1
                        return .list(values)
                    }
                case UInt8(ascii: "\\") where at + 1 < bytes.count:
                    at += 1
                    value.append(bytes[at])
                default:
                    value.append(byte)
                }
                at += 1
            }
            throw problem("unmatched brace", at: open)
        }

        /// `[N-M]`, `[N-M:S]`, `[a-z]`, `[a-z:S]`, as curl's `glob_range` reads them.
        mutating func range() throws(Problem) -> Part {
            let open = at
            guard let close = bytes[at...].firstIndex(of: UInt8(ascii: "]")) else {
                throw problem("unmatched bracket", at: open)
            }
            let inside = Array(bytes[(at + 1)..<close])
            at = close + 1
            guard let dash = inside.firstIndex(of: UInt8(ascii: "-")), dash > 0 else {
                throw problem("bad range specification", at: open)
            }
            let colon = inside.firstIndex(of: UInt8(ascii: ":"))
            let from = Array(inside[..<dash])
            let to = Array(inside[(dash + 1)..<(colon ?? inside.count)])
            var step: UInt64 = 1
            if let colon {
                guard let parsed = Self.number(inside[(colon + 1)...]) else { throw problem("bad range", at: open) }
                step = parsed
            }
            if from.count == 1, to.count == 1, let first = from.first, let last = to.first,
                Self.isLetter(first), Self.isLetter(last)
            {
                guard Self.isLower(first) == Self.isLower(last),
                    let count = Self.count(UInt64(first), UInt64(last), step: step)
                else { throw problem("bad range", at: open) }
                return .letters(first: first, step: UInt8(step), count: count)
            }
            guard let first = Self.number(from[...]), let last = Self.number(to[...]),
                let count = Self.count(first, last, step: step)
            else { throw problem(Self.number(from[...]) == nil ? "bad range specification" : "bad range", at: open) }
            // A leading zero asks for every number at the width of the first (curl's rule).
            let width = from.first == UInt8(ascii: "0") ? from.count : 0
            return .numbers(first: first, step: step, count: count, width: width)
        }

        /// How many values `first...last` by `step` has; nil for a range curl refuses: backwards, a step of 0,
        /// a step past the range (other than 1 for a range of one), or more values than an `Int` counts.
        static func count(_ first: UInt64, _ last: UInt64, step: UInt64) -> Int? {
            guard step > 0, first <= last else { return nil }
            if first == last { return step == 1 ? 1 : nil }
            guard step <= last - first else { return nil }
            let steps = (last - first) / step
            return steps < UInt64(Int.max) ? Int(steps) + 1 : nil
        }

        /// Decimal digits (at least one) that fit 64 bits.
        static func number(_ digits: ArraySlice<UInt8>) -> UInt64? {
            guard !digits.isEmpty else { return nil }
            var value: UInt64 = 0
            for byte in digits {
                guard let digit = URLGlob.digit(byte) else { return nil }
                let (times, over1) = value.multipliedReportingOverflow(by: 10)
                let (sum, over2) = times.addingReportingOverflow(UInt64(digit))
                if over1 || over2 { return nil }
                value = sum
            }
            return value
        }

        static func isLetter(_ byte: UInt8) -> Bool {
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
        }

        static func isLower(_ byte: UInt8) -> Bool {
            byte >= UInt8(ascii: "a")
        }
    }
}
