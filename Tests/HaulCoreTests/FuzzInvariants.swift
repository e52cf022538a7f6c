// The properties the fuzz pass checks, as plain functions of what the parsers returned, so that the property
// tests (FuzzTests.swift) and the libFuzzer harness (fuzz/) check the very same things. No imports on purpose:
// fuzz/run compiles this file together with the few HaulCore sources it fuzzes, in one module.

enum FuzzInvariants {
    /// What is wrong with `name` as a sanitised file name (empty when nothing). `again` is the name sanitised a
    /// second time, which must give back the same bytes.
    static func nameViolations(_ name: String, again: String, maxBytes: Int) -> [String] {
        var problems: [String] = []
        let bytes = Array(name.utf8)
        if bytes.isEmpty { problems.append("empty") }
        if name == "." || name == ".." { problems.append("is . or ..") }
        if bytes.first == UInt8(ascii: ".") { problems.append("starts with a dot") }
        if bytes.contains(UInt8(ascii: "/")) { problems.append("holds a /") }
        if bytes.contains(UInt8(ascii: "\\")) { problems.append("holds a \\") }
        if bytes.contains(0) { problems.append("holds a NUL") }
        if name.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
            problems.append("holds a C0/C1 control or DEL")
        }
        if name.unicodeScalars.contains(where: { Self.bidiOverride($0) || $0 == "\u{FEFF}" }) {
            problems.append("holds a bidi embedding, override or isolate, or a BOM")
        }
        if name.first?.isWhitespace == true || name.last?.isWhitespace == true {
            problems.append("white space at an end")
        }
        if bytes.count > maxBytes { problems.append("\(bytes.count) bytes, over \(maxBytes)") }
        if Array(again.utf8) != bytes { problems.append("not idempotent: sanitised again it is \(Self.literal(again))") }
        return problems
    }

    /// U+202A...U+202E and U+2066...U+2069: the characters that reorder what follows them.
    static func bidiOverride(_ scalar: Unicode.Scalar) -> Bool {
        (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
    }

    /// What is wrong with a parsed `Content-Range` (first <= last, last < total, last + 1 representable).
    static func rangeViolations(_ range: (first: Int64, last: Int64, total: Int64?)?) -> [String] {
        guard let range else { return [] }
        var problems: [String] = []
        if range.first < 0 { problems.append("first \(range.first) < 0") }
        if range.first > range.last { problems.append("first \(range.first) > last \(range.last)") }
        if range.last == .max { problems.append("last is Int64.max: last + 1, the end, overflows") }
        if let total = range.total, range.last >= total { problems.append("last \(range.last) >= total \(total)") }
        return problems
    }

    static func lengthViolations(_ length: Int64?) -> [String] {
        guard let length, length < 0 else { return [] }
        return ["negative length \(length)"]
    }

    /// The header lines a `ResponseHead.Builder` kept: names non-empty and without a colon, names and values
    /// without white space (SP, HT, CR, LF) at either end.
    static func headerViolations(_ lines: [(name: String, value: String)]) -> [String] {
        func spaced(_ text: String) -> Bool {
            let ends = [text.utf8.first, text.utf8.last].compactMap { $0 }
            return ends.contains { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
        }
        var problems: [String] = []
        for line in lines {
            if line.name.isEmpty { problems.append("empty name") }
            if line.name.utf8.contains(UInt8(ascii: ":")) { problems.append("name \(literal(line.name)) holds a colon") }
            if spaced(line.name) { problems.append("name \(literal(line.name)) not trimmed") }
            if spaced(line.value) { problems.append("value \(literal(line.value)) not trimmed") }
        }
        return problems
    }

    // MARK: Reference parsers, written independently of ResponseHead, from the RFC 9110 grammar.

    /// 1*DIGIT as an Int64: no sign, no space, nil past Int64.max.
    static func strictDigits<C: Collection<UInt8>>(_ bytes: C) -> Int64? {
        guard !bytes.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in bytes {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int64(byte - 0x30))
            if overflow1 || overflow2 { return nil }
            value = sum
        }
        return value
    }

    /// `bytes FIRST-LAST/TOTAL` or `bytes FIRST-LAST/*` ("bytes" in any case), as a download can use it.
    static func strictContentRange(_ value: String) -> (first: Int64, last: Int64, total: Int64?)? {
        let bytes = Array(value.utf8)
        guard bytes.count > 6, foldedASCII(bytes[..<6]) == Array("bytes ".utf8) else { return nil }
        let spec = bytes[6...]
        guard let dash = spec.firstIndex(of: UInt8(ascii: "-")),
            let slash = spec[dash...].firstIndex(of: UInt8(ascii: "/")),
            let first = strictDigits(spec[..<dash]), let last = strictDigits(spec[(dash + 1)..<slash]),
            first <= last, last < .max
        else { return nil }
        let rest = spec[(slash + 1)...]
        if rest.elementsEqual([UInt8(ascii: "*")]) { return (first, last, nil) }
        guard let total = strictDigits(rest), last < total else { return nil }
        return (first, last, total)
    }

    /// `a == b` for HTTP field names: ASCII letters in any case, every other byte as it is.
    static func sameFieldName(_ a: String, _ b: String) -> Bool {
        foldedASCII(a.utf8) == foldedASCII(b.utf8)
    }

    /// A...Z as a...z, every other byte as it is.
    static func foldedASCII<C: Collection<UInt8>>(_ bytes: C) -> [UInt8] {
        bytes.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 + 0x20 : $0 }
    }

    /// A Swift literal for a string, with every byte outside printable ASCII escaped, to paste into a unit test.
    static func literal(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case " "..."~": out.unicodeScalars.append(scalar)
            default: out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            }
        }
        return out + "\""
    }
}
