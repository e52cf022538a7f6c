/// How to answer a request's `Range` header for a representation of a known size (RFC 9110, section 14).
///
/// Only a single `bytes` range is honoured; a multi-range or malformed header is ignored and the whole
/// representation is sent, as most servers do.
enum RangeRequest: Equatable, Sendable {
    /// Send everything with `200 OK`.
    case whole
    /// Send these bytes with `206 Partial Content`.
    case partial(ClosedRange<Int>)
    /// Answer `416 Range Not Satisfiable` with `Content-Range: bytes */size`.
    case unsatisfiable

    init(header: String?, size: Int) {
        guard let header else {
            self = .whole
            return
        }
        let value = header.trimmingASCIISpaces()
        let unit = "bytes="
        guard value.count > unit.count, value.prefix(unit.count).lowercased() == unit else {
            self = .whole
            return
        }
        let spec = value.dropFirst(unit.count)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else {
            self = .whole
            return
        }
        let first = spec[..<dash].trimmingASCIISpaces()
        let last = spec[spec.index(after: dash)...].trimmingASCIISpaces()
        switch (Self.number(first), Self.number(last)) {
        case (nil, let suffixLength?) where first.isEmpty:
            guard suffixLength > 0, size > 0 else {
                self = .unsatisfiable
                return
            }
            self = .partial(Swift.max(0, size - suffixLength)...(size - 1))
        case (let start?, nil) where last.isEmpty:
            self = start < size ? .partial(start...(size - 1)) : .unsatisfiable
        case (let start?, let end?) where start <= end:
            self = start < size ? .partial(start...Swift.min(end, size - 1)) : .unsatisfiable
        default:
            self = .whole
        }
    }

    private static func number(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(text)
    }
}

extension StringProtocol {
    func trimmingASCIISpaces() -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isSpace($0) }), let end = lastIndex(where: { !isSpace($0) }) else {
            return Substring()
        }
        return Substring(self[start...end])
    }
}
