import FoundationEssentials

// The few string operations haul used from Foundation proper (`trimmingCharacters(in: .whitespaces)`,
// `removingPercentEncoding`). `haul` links FoundationEssentials alone: Foundation brings CoreFoundation, its
// internationalisation and ICU's tables (48 MB of the binary), whose relocations, constructors and ~1,850
// conformance records every start paid for (docs/benchmarks-history.md, "Thirty-second pass").

extension StringProtocol {
    /// Without the leading and trailing characters of `CharacterSet.whitespaces`: tab, the Unicode space
    /// separators (U+0020, U+00A0, U+1680, U+2000-U+200A, U+202F, U+205F, U+3000) and U+200B. Not line breaks.
    package func trimmingWhitespace() -> String {
        let scalars = Substring(self).unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.isHorizontalSpace }) else { return "" }
        let last = scalars.lastIndex(where: { !$0.isHorizontalSpace })!
        return String(Substring(scalars[first...last]))
    }

    /// `%XX` escapes decoded; nil when a `%` is not followed by two hex digits or the bytes are not UTF-8,
    /// as Foundation's `removingPercentEncoding`.
    var percentDecoded: String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var iterator = utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next()?.hexDigitValue, let low = iterator.next()?.hexDigitValue else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

extension UInt8 {
    /// The value of this byte as an ASCII hex digit (either case), or nil.
    var hexDigitValue: UInt8? {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): self - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): self - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): self - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension Unicode.Scalar {
    /// Tab, a space separator (general category Zs) or the zero-width space: `CharacterSet.whitespaces`
    /// (which keeps U+200B from the Unicode versions that had it in Zs).
    var isHorizontalSpace: Bool {
        value == 0x09 || value == 0x200B || properties.generalCategory == .spaceSeparator
    }
}
