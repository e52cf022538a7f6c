/// The status line and headers of the final response (after redirects).
package struct ResponseHead: Sendable, Equatable {
    package var status: Int
    /// Header fields in arrival order, names as the server spelled them.
    package let headers: [(name: String, value: String)]
    /// The URL that answered, after redirects.
    package var effectiveURL: String
    /// `Content-Length` read once (`contentLength`, `framingProblem`): a download asks three times.
    private let announcedLength: AnnouncedLength

    /// A struct, not a tuple: a head is copied on the curl thread, and a tuple holding a string is copied
    /// through the runtime's generic tuple witness.
    private struct AnnouncedLength {
        let length: Int64?
        let problem: String?
    }

    package init(status: Int, headers: [(name: String, value: String)], effectiveURL: String) {
        self.status = status
        self.headers = headers
        self.effectiveURL = effectiveURL
        let (length, problem) = Self.announcedLength(in: headers)
        announcedLength = AnnouncedLength(length: length, problem: problem)
    }

    /// The first value of a header, compared case-insensitively (ASCII, as HTTP field names are).
    package subscript(_ name: String) -> String? {
        headers.first { Self.sameName($0.name, name) }?.value
    }

    static func sameName(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        // Over the strings' contiguous UTF-8 (header names are native strings): a plain loop, where zipping
        // two UTF8Views went through their iterators (a download looks up some 60 names).
        var a = a, b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in
                for i in 0..<x.count where x[i] != y[i] {
                    let folded = x[i] | 0x20
                    guard folded == y[i] | 0x20, folded >= UInt8(ascii: "a"), folded <= UInt8(ascii: "z") else {
                        return false
                    }
                }
                return true
            }
        }
    }

    /// Body length announced by `Content-Length`, if any: nil also when it cannot be read (`framingProblem`).
    package var contentLength: Int64? {
        announcedLength.length
    }

    /// Why the answer's `Content-Length` cannot say where its body ends, nil when it can (or is absent):
    /// a value that is not a number or does not fit 63 bits (taken as "no length", a body cut short would
    /// look whole), or several values that differ (RFC 9112, 6.3: the framing is unknown; libcurl takes
    /// the last, haul's size check would take the first). A list of one value repeated (`3, 3`) is that value.
    package var framingProblem: String? {
        announcedLength.problem
    }

    private static func announcedLength(in headers: [(name: String, value: String)]) -> (length: Int64?, problem: String?) {
        var seen: Int64?
        fields: for field in headers where Self.sameName(field.name, "Content-Length") {
            // One pass over the bytes: each comma-separated item, spaces and tabs around it aside, is 1*DIGIT
            // that fits 63 bits. (Splitting into substrings and parsing each took 6,000 instructions a call,
            // three calls a download.)
            var number: Int64 = 0
            var digits = 0
            var after = false  // spaces or tabs came after the item's digits
            var utf8 = field.value.utf8.makeIterator()
            items: while true {
                let byte = utf8.next()
                switch byte {
                case let digit? where digit >= UInt8(ascii: "0") && digit <= UInt8(ascii: "9"):
                    let (times, over) = number.multipliedReportingOverflow(by: 10)
                    let (sum, past) = times.addingReportingOverflow(Int64(digit &- UInt8(ascii: "0")))
                    guard !after, !over, !past else { break items }
                    number = sum
                    digits += 1
                case UInt8(ascii: " ")?, UInt8(ascii: "\t")?:
                    if digits > 0 { after = true }
                case nil, UInt8(ascii: ",")?:
                    guard digits > 0 else { break items }
                    if let seen, seen != number {
                        return (nil, "the server announced two lengths, \(seen) and \(number) bytes")
                    }
                    seen = number
                    guard byte != nil else { continue fields }
                    (number, digits, after) = (0, 0, false)
                default:
                    break items
                }
            }
            return (nil, "the server's Content-Length \"\(field.value)\" is not a length")
        }
        return (seen, nil)
    }

    /// For a 206 answer, the `Content-Range: bytes FIRST-LAST/TOTAL` values (TOTAL nil when `*`). Nil unless
    /// FIRST <= LAST < TOTAL, and LAST < Int64.max so that the end, LAST + 1, is an Int64 too.
    package var contentRange: (first: Int64, last: Int64, total: Int64?)? {
        guard let value = self["Content-Range"], value.utf8.count > 6,
            Self.sameName(String(value.prefix(6)), "bytes ")
        else { return nil }
        let spec = value.dropFirst(6)
        let parts = spec.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let bounds = parts[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Self.digits(bounds[0]), let last = Self.digits(bounds[1]), first <= last,
            last < .max
        else { return nil }
        if parts[1] == "*" { return (first, last, nil) }
        guard let total = Self.digits(parts[1]), last < total else { return nil }
        return (first, last, total)
    }

    /// A number as HTTP writes it, 1*DIGIT: `Int64(_:)` would also take a sign ("-5", "+5"). Nil past Int64.max.
    static func digits(_ text: some StringProtocol) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return Int64(text)
    }

    /// For a 416 answer, the size in `Content-Range: bytes */TOTAL`.
    var unsatisfiedRangeTotal: Int64? {
        guard let value = self["Content-Range"], value.utf8.count > 8,
            Self.sameName(String(value.prefix(8)), "bytes */")
        else { return nil }
        return Int64(value.dropFirst(8)).flatMap { $0 >= 0 ? $0 : nil }
    }

    package static func == (a: ResponseHead, b: ResponseHead) -> Bool {
        a.status == b.status && a.effectiveURL == b.effectiveURL
            && a.headers.map { [$0.name, $0.value] } == b.headers.map { [$0.name, $0.value] }
    }

    /// Parses the header lines curl hands over, one call per line (status line included). Works on the
    /// raw bytes: it runs on the curl thread for every header of every response.
    struct Builder {
        var lines: [(name: String, value: String)] = []

        mutating func add(line: String) {
            var line = line
            line.withUTF8 { add(line: UnsafeRawBufferPointer($0)) }
        }

        mutating func add(line bytes: UnsafeRawBufferPointer) {
            if bytes.starts(with: "HTTP/".utf8) {
                lines.removeAll()  // a new response begins (redirect, 100 Continue)
                return
            }
            guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return }
            let name = Self.trimmed(bytes, 0, colon)
            guard !name.isEmpty else { return }
            let value = Self.trimmed(bytes, colon + 1, bytes.count)
            // Room for a usual response's headers at once, not grown 1, 2, 4, 8 as they come.
            if lines.capacity == 0 { lines.reserveCapacity(16) }
            lines.append((String(decoding: name, as: UTF8.self), Self.text(value)))
        }

        /// A field value as text: UTF-8 when its bytes are valid UTF-8, else ISO-8859-1, byte for byte (what
        /// HTTP's older fields, such as a quoted `Content-Disposition` file name, were written in).
        static func text(_ bytes: UnsafeRawBufferPointer.SubSequence) -> String {
            if bytes.allSatisfy({ $0 < 0x80 }) || String(validating: bytes, as: UTF8.self) != nil {
                return String(decoding: bytes, as: UTF8.self)
            }
            return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        }

        /// `bytes[from..<to]` without the ASCII white space (space, tab, CR, LF) at either end.
        private static func trimmed(_ bytes: UnsafeRawBufferPointer, _ from: Int, _ to: Int) -> UnsafeRawBufferPointer.SubSequence {
            func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
            var (start, end) = (from, to)
            while start < end, isSpace(bytes[start]) { start += 1 }
            while end > start, isSpace(bytes[end - 1]) { end -= 1 }
            return bytes[start..<end]
        }
    }
}
