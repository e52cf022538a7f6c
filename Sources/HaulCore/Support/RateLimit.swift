import Foundation

/// Parses rates such as `500K`, `2M`, `1.5M`, `1G` or `65536` (bytes per second, binary multiples, as curl).
public enum RateLimit {
    public static func parse(_ text: String) -> Int64? {
        var digits = Substring(text.trimmingCharacters(in: .whitespaces))
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
        guard let value = Double(digits), value.isFinite, value > 0 else { return nil }
        let bytes = (value * multiplier).rounded()
        guard bytes >= 1, bytes < Double(Int64.max) else { return nil }
        return Int64(bytes)
    }
}
