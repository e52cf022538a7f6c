/// Parses rates such as `500K`, `2M`, `1.5M`, `1G` or `65536` (bytes per second, binary multiples, as curl).
///
/// Only decimal digits with an optional fraction and suffix are read: no sign, exponent, hex, `nan` or
/// `inf`, so no text can overflow the conversion. The result is within `range`.
package enum RateLimit {
    /// 1 byte per second to 1 TiB per second (`1024G`).
    static let range: ClosedRange<Int64> = 1...(1 << 40)

    package static func parse(_ text: String) -> Int64? {
        var digits = Substring(text)
        while digits.first == " " { digits.removeFirst() }
        while digits.last == " " { digits.removeLast() }
        var multiplier: Double = 1
        if let last = digits.last, last.isLetter {
            switch last.lowercased() {
            case "k": multiplier = 1024
            case "m": multiplier = 1024 * 1024
            case "g": multiplier = 1024 * 1024 * 1024
            default: return nil
            }
            digits = digits.dropLast()
        }
        let parts = digits.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.count <= 16,
            parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            parts.count == 1 || !parts[1].isEmpty,
            let value = Double(digits)
        else { return nil }
        let bytes = (value * multiplier).rounded()
        guard bytes >= Double(range.lowerBound), bytes <= Double(range.upperBound) else { return nil }
        return Int64(bytes)
    }
}
