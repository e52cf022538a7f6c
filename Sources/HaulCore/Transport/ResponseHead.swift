/// The status line and headers of the final response (after redirects).
package struct ResponseHead: Sendable, Equatable {
    package var status: Int
    /// Header fields in arrival order, names as the server spelled them.
    let headers: [(name: String, value: String)]
    /// The URL that answered, after redirects.
    var effectiveURL: String
    /// Made by haul from what libcurl learnt of a file over FTP or SFTP (`ResponseHead.remoteFile`), not
    /// sent by a server: no server vouches in it that the file is unchanged (see `ResponseCheck.placement`).
    let synthesized: Bool
    /// `Content-Length` read once (`contentLength`, `framingProblem`): a download asks three times.
    private let announcedLength: AnnouncedLength

    /// A struct, not a tuple: a head is copied on the curl thread, and a tuple holding a string is copied
    /// through the runtime's generic tuple witness.
    private struct AnnouncedLength {
        let length: Int64?
        let problem: String?
    }

    /// Where each `Field` first appears in `headers`, a byte a field: its index + 1 (0: absent; 255: past the
    /// first 254 headers, looked up by name).
    private let found: UInt64

    /// The fields haul reads. A download asks for them a dozen times; by name, each ask compared the names
    /// of all the headers (some 60 comparisons, 2,000 instructions a download).
    package enum Field: Int, Sendable {
        case contentLength, contentRange, contentType, contentDisposition, eTag, lastModified, acceptRanges, retryAfter

        var name: String { spelling.description }

        var spelling: StaticString {
            switch self {
            case .contentLength: "Content-Length"
            case .contentRange: "Content-Range"
            case .contentType: "Content-Type"
            case .contentDisposition: "Content-Disposition"
            case .eTag: "ETag"
            case .lastModified: "Last-Modified"
            case .acceptRanges: "Accept-Ranges"
            case .retryAfter: "Retry-After"
            }
        }
    }

    package init(status: Int, headers: [(name: String, value: String)], effectiveURL: String,
                 synthesized: Bool = false) {
        self.synthesized = synthesized
        self.status = status
        self.headers = headers
        self.effectiveURL = effectiveURL
        found = Self.fields(in: headers)
        let (length, problem) = Self.announcedLength(in: headers)
        announcedLength = AnnouncedLength(length: length, problem: problem)
    }

    /// The first value of a header, compared case-insensitively (ASCII, as HTTP field names are).
    package subscript(_ name: String) -> String? {
        headers.first { Self.sameName($0.name, name) }?.value
    }

    /// The first value of one of the fields haul reads: found when the head was made.
    package subscript(_ field: Field) -> String? {
        switch (found >> (UInt64(field.rawValue) * 8)) & 0xFF {
        case 0: nil
        case 0xFF: self[field.name]
        case let slot: headers[Int(slot) - 1].value
        }
    }

    /// One pass over the names, on their bytes: each compared only with the field of its length and first
    /// letter, so one comparison for each field present.
    private static func fields(in headers: [(name: String, value: String)]) -> UInt64 {
        var found: UInt64 = 0
        for (position, header) in headers.enumerated() {
            // A name not stored as contiguous UTF-8 (never one the Builder makes): every field is left to the
            // lookup by name.
            guard let field = header.name.utf8.withContiguousStorageIfAvailable(field(named:)) else { return .max }
            guard let field else { continue }
            let shift = UInt64(field.rawValue) * 8
            if (found >> shift) & 0xFF == 0 { found |= UInt64(Swift.min(position + 1, 0xFF)) << shift }
        }
        return found
    }

    /// The field `name` is, if haul reads it.
    private static func field(named name: UnsafeBufferPointer<UInt8>) -> Field? {
        let field: Field
        switch (name.count, (name.first ?? 0) | 0x20) {
        case (4, UInt8(ascii: "e")): field = .eTag
        case (11, UInt8(ascii: "r")): field = .retryAfter
        case (12, UInt8(ascii: "c")): field = .contentType
        case (13, UInt8(ascii: "c")): field = .contentRange
        case (13, UInt8(ascii: "l")): field = .lastModified
        case (13, UInt8(ascii: "a")): field = .acceptRanges
        case (14, UInt8(ascii: "c")): field = .contentLength
        case (19, UInt8(ascii: "c")): field = .contentDisposition
        default: return nil
        }
        return sameName(name, field.spelling) ? field : nil
    }

    /// `name` is `spelling` but for the case of ASCII letters.
    private static func sameName(_ name: UnsafeBufferPointer<UInt8>, _ spelling: StaticString) -> Bool {
        guard name.count == spelling.utf8CodeUnitCount else { return false }
        let y = spelling.utf8Start
        for i in 0..<name.count where name[i] != y[i] {
            let folded = name[i] | 0x20
            guard folded == y[i] | 0x20, folded >= UInt8(ascii: "a"), folded <= UInt8(ascii: "z") else { return false }
        }
        return true
    }

    static func sameName(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        // Over the strings' contiguous UTF-8 (header names are native strings): a plain loop, where zipping
        // two UTF8Views went through their iterators. Read in place: `withUTF8` needs a mutable copy of each.
        func same(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool {
            for i in 0..<x.count where x[i] != y[i] {
                let folded = x[i] | 0x20
                guard folded == y[i] | 0x20, folded >= UInt8(ascii: "a"), folded <= UInt8(ascii: "z") else {
                    return false
                }
            }
            return true
        }
        if let result = a.utf8.withContiguousStorageIfAvailable({ x in
            b.utf8.withContiguousStorageIfAvailable { y in same(x, y) }
        }), let result { return result }
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        return x.withUnsafeBufferPointer { x in y.withUnsafeBufferPointer { y in same(x, y) } }
    }

    /// Body length announced by `Content-Length`, if any: nil also when it cannot be read (`framingProblem`).
    var contentLength: Int64? {
        announcedLength.length
    }

    /// Why the answer's `Content-Length` cannot say where its body ends, nil when it can (or is absent):
    /// a value that is not a number or does not fit 63 bits (taken as "no length", a body cut short would
    /// look whole), or several values that differ (RFC 9112, 6.3: the framing is unknown; libcurl takes
    /// the last, haul's size check would take the first). A list of one value repeated (`3, 3`) is that value.
    var framingProblem: String? {
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
    var contentRange: (first: Int64, last: Int64, total: Int64?)? {
        guard let value = self[.contentRange], value.utf8.count > 6,
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
        guard let value = self[.contentRange], value.utf8.count > 8,
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
            // Byte by byte: `starts(with: "HTTP/".utf8)` went through the generic sequence path (1,000
            // instructions a response).
            if bytes.count >= 5, bytes[0] == UInt8(ascii: "H"), bytes[1] == UInt8(ascii: "T"),
                bytes[2] == UInt8(ascii: "T"), bytes[3] == UInt8(ascii: "P"), bytes[4] == UInt8(ascii: "/")
            {
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
