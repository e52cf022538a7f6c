import Foundation

/// The status line and headers of the final response (after redirects).
public struct ResponseHead: Sendable, Equatable {
    public var status: Int
    /// Header fields in arrival order, names as the server spelled them.
    public var headers: [(name: String, value: String)]
    /// The URL that answered, after redirects.
    public var effectiveURL: String

    public init(status: Int, headers: [(name: String, value: String)], effectiveURL: String) {
        self.status = status
        self.headers = headers
        self.effectiveURL = effectiveURL
    }

    /// The first value of a header, compared case-insensitively.
    public subscript(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }

    /// Body length announced by `Content-Length`, if any.
    public var contentLength: Int64? {
        self["Content-Length"].flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// For a 206 answer, the `Content-Range: bytes FIRST-LAST/TOTAL` values (TOTAL nil when `*`).
    public var contentRange: (first: Int64, last: Int64, total: Int64?)? {
        guard let value = self["Content-Range"]?.trimmingCharacters(in: .whitespaces),
            value.lowercased().hasPrefix("bytes ")
        else { return nil }
        let spec = value.dropFirst(6)
        let parts = spec.split(separator: "/", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        let bounds = parts[0].split(separator: "-", maxSplits: 1)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first <= last
        else { return nil }
        return (first, last, Int64(parts[1]))
    }

    public static func == (a: ResponseHead, b: ResponseHead) -> Bool {
        a.status == b.status && a.effectiveURL == b.effectiveURL
            && a.headers.map { [$0.name, $0.value] } == b.headers.map { [$0.name, $0.value] }
    }

    /// Parses the header lines curl hands over, one call per line (status line included).
    struct Builder {
        var lines: [(name: String, value: String)] = []

        mutating func add(line raw: String) {
            let line = raw.trimmingCharacters(in: .newlines)
            if line.hasPrefix("HTTP/") {
                lines.removeAll()  // a new response begins (redirect, 100 Continue)
                return
            }
            guard let colon = line.firstIndex(of: ":") else { return }
            let name = String(line[..<colon]).trimmingCharacters(in: .whitespaces)
            let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            if !name.isEmpty { lines.append((name, value)) }
        }
    }
}
