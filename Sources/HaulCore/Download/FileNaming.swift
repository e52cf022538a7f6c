import Foundation

/// Turns what a server or a URL suggests into a safe base name inside the output directory.
///
/// The result never contains `/`, `\`, NUL or other control characters, nor invisible ones (format
/// characters such as bidi marks and overrides, line and paragraph separators, surrogates, unassigned code
/// points), is never `.`, `..` or empty, never starts with a dot (no hidden files), and is at most
/// `maxBytes` UTF-8 bytes, keeping the extension.
package enum FileNaming {
    /// 255 (NAME_MAX) less room for what haul adds to a name: a rename's ".NNNNN", ".part.json", and the
    /// state file's temporary ".XXXXXXXX.tmp" (31 bytes at most).
    package static let maxBytes = 224

    package static func sanitize(_ suggested: String) -> String {
        plainASCII(suggested) ?? sanitizeScalars(suggested)
    }

    /// `sanitize` the whole way, scalar by scalar.
    static func sanitizeScalars(_ suggested: String) -> String {
        // On scalars, not Characters: "/\u{301}" is one Character, unequal to "/", that holds a slash all the same.
        let components = suggested.unicodeScalars.split(whereSeparator: { $0 == "/" || $0 == "\\" })
        var name = visible(String(String.UnicodeScalarView(components.last ?? Substring().unicodeScalars)))
        name = trimmed(name)
        // Cutting can leave white space at the end, keep only the extension and so start with a dot, or end
        // in a joiner with nothing left to join.
        name = trimmed(visible(truncate(name, toBytes: maxBytes)))
        return name.isEmpty ? "download" : name
    }

    /// The common case without the Unicode work (a thousand small files spent 6% of their user CPU here):
    /// the last `/`- or `\\`-separated part of `suggested` when it is printable ASCII that `sanitize` would
    /// return unchanged (not empty, at most `maxBytes`, no dot or space first, no space last); else nil.
    private static func plainASCII(_ suggested: String) -> String? {
        let bytes = suggested.utf8
        let start = bytes.lastIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "\\") })
            .map(bytes.index(after:)) ?? bytes.startIndex
        let component = bytes[start...]
        guard let first = component.first, let last = component.last, component.count <= maxBytes,
            first != UInt8(ascii: "."), first != UInt8(ascii: " "), last != UInt8(ascii: " "),
            component.allSatisfy({ (0x20...0x7E).contains($0) })
        else { return nil }
        return String(Substring(component))
    }

    /// Without white space at either end and without dots at the start (no hidden files, no `.` or `..`), both
    /// taken off until none is left: ". x" loses the space after the dot too. A Character counts by its first
    /// scalar, as `isWhitespace` does: ".\u{301}" starts with a dot all the same.
    private static func trimmed(_ name: String) -> String {
        var name = Substring(name)
        while let first = name.first, first.isWhitespace || first.unicodeScalars.first == "." { name.removeFirst() }
        while name.last?.isWhitespace == true { name.removeLast() }
        return String(name)
    }

    /// Why `name` (`-O`, a name the user gave) is not a plain file name, or nil when it is one: no `/`, not
    /// empty, `.` or `..`, no NUL or other control character (C0, DEL, C1). The engine refuses any other
    /// `DownloadJob.outputName`; the command line checks `-O` with it before that.
    package static func problem(withPlainName name: String) -> String? {
        if name.isEmpty { return "is empty" }
        if name == "." || name == ".." { return "is not a file name" }
        if name.contains("/") { return "is a path, not a file name" }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "contains control characters"
        }
        if name.utf8.count > 255 { return "is longer than 255 bytes" }
        return nil
    }

    /// `text` without the scalars that a file listing would not show: by general category, so every script
    /// and emoji stays whatever Unicode version adds next. A zero-width joiner or non-joiner stays between
    /// two kept scalars, where it shapes an emoji sequence (👩‍💻) or a word (Persian می‌خواهم); anywhere else
    /// it only hides something and goes too.
    static func visible(_ text: String) -> String {
        let scalars = Array(text.unicodeScalars)
        func isHidden(_ scalar: Unicode.Scalar) -> Bool {
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .unassigned: true
            default: false
            }
        }
        var kept = String.UnicodeScalarView()
        for (index, scalar) in scalars.enumerated() {
            guard isHidden(scalar) else {
                kept.append(scalar)
                continue
            }
            let isJoiner = scalar == "\u{200C}" || scalar == "\u{200D}"
            if isJoiner, let last = kept.last, !last.properties.isWhitespace,
                index + 1 < scalars.count, !isHidden(scalars[index + 1]), !scalars[index + 1].properties.isWhitespace
            {
                kept.append(scalar)
            }
        }
        return String(kept)
    }

    /// Cuts to at most `limit` UTF-8 bytes on a character boundary, keeping a short extension.
    static func truncate(_ name: String, toBytes limit: Int) -> String {
        guard name.utf8.count > limit else { return name }
        let (stem, ext) = split(name)
        let suffix = ext.utf8.count <= min(16, limit) ? ext : ""
        var cut = ""
        for character in stem {
            if cut.utf8.count + character.utf8.count + suffix.utf8.count > limit { break }
            cut.append(character)
        }
        return cut + suffix
    }

    /// "photo.jpg" -> ("photo", ".jpg"); "archive.tar.gz" -> ("archive.tar", ".gz"); "README" -> ("README", "").
    package static func split(_ name: String) -> (stem: String, ext: String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return (name, "") }
        return (String(name[..<dot]), String(name[dot...]))
    }

    /// The name a download gets: Content-Disposition first, then the URL's last path segment.
    package static func name(contentDisposition: String?, url: String) -> String {
        if let header = contentDisposition, let suggested = filename(fromContentDisposition: header) {
            return sanitize(suggested)
        }
        return sanitize(lastPathSegment(of: url))
    }

    /// The file name of a `Content-Disposition` value: `filename*=UTF-8''...` (RFC 6266/8187) wins over
    /// `filename="..."`.
    package static func filename(fromContentDisposition header: String) -> String? {
        var plain: String?
        var extended: String?
        for parameter in parameters(of: header) {
            switch parameter.name.lowercased() {
            case "filename*":
                let value = parameter.value
                guard let quote = value.range(of: "''") else { continue }
                let charset = value[..<quote.lowerBound].split(separator: "'").first?.lowercased() ?? ""
                let encoded = String(value[quote.upperBound...])
                if charset == "utf-8" || charset == "us-ascii" { extended = encoded.removingPercentEncoding }
            case "filename":
                plain = parameter.value
            default:
                break
            }
        }
        return [extended, plain].compactMap { $0 }.first { !$0.isEmpty }
    }

    /// `attachment; filename="a;b.txt"; size=3` -> [("filename", "a;b.txt"), ("size", "3")].
    static func parameters(of header: String) -> [(name: String, value: String)] {
        var result: [(String, String)] = []
        var index = header.firstIndex(of: ";") ?? header.endIndex
        while index < header.endIndex {
            index = header.index(after: index)
            let rest = header[index...]
            guard let equals = rest.firstIndex(of: "=") else { break }
            let name = rest[..<equals].trimmingCharacters(in: .whitespaces)
            var cursor = header.index(after: equals)
            while cursor < header.endIndex, header[cursor] == " " { cursor = header.index(after: cursor) }
            var value = ""
            if cursor < header.endIndex, header[cursor] == "\"" {
                cursor = header.index(after: cursor)
                while cursor < header.endIndex, header[cursor] != "\"" {
                    if header[cursor] == "\\", header.index(after: cursor) < header.endIndex {
                        cursor = header.index(after: cursor)
                    }
                    value.append(header[cursor])
                    cursor = header.index(after: cursor)
                }
                if cursor < header.endIndex { cursor = header.index(after: cursor) }
                index = header[cursor...].firstIndex(of: ";") ?? header.endIndex
            } else {
                let end = header[cursor...].firstIndex(of: ";") ?? header.endIndex
                value = header[cursor..<end].trimmingCharacters(in: .whitespaces)
                index = end
            }
            result.append((name, value))
        }
        return result
    }

    /// The URL's last non-empty path segment, percent-decoded; "index.html" for a bare host or directory.
    /// A bare query naming a file (`/files/download?photo.jpg`, no `=` or `&`) names it instead.
    package static func lastPathSegment(of url: String) -> String {
        // On the UTF-8 bytes: every delimiter is ASCII, and this runs for every queued URL.
        let bytes = Array(url.utf8)
        var start = 0
        var end = bytes.count
        if let scheme = firstIndex(of: Array("://".utf8), in: bytes) { start = scheme + 3 }
        if let fragment = bytes[start..<end].firstIndex(of: UInt8(ascii: "#")) { end = fragment }
        if let question = bytes[start..<end].firstIndex(of: UInt8(ascii: "?")) {
            let query = bytes[(question + 1)..<end]
            if !query.isEmpty, !query.contains(UInt8(ascii: "=")), !query.contains(UInt8(ascii: "&")) {
                return decoded(query)
            }
            end = question
        }
        guard let slash = bytes[start..<end].firstIndex(of: UInt8(ascii: "/")) else { return "index.html" }
        guard bytes[end - 1] != UInt8(ascii: "/") else { return "index.html" }
        let segmentStart = (bytes[slash..<end].lastIndex(of: UInt8(ascii: "/")) ?? slash) + 1
        return decoded(bytes[segmentStart..<end])
    }

    private static func firstIndex(of needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        return (0...(bytes.count - needle.count)).first { bytes[$0..<$0 + needle.count].elementsEqual(needle) }
    }

    /// Percent-decoded when it holds an escape (and the escapes are valid UTF-8), else as it is.
    private static func decoded(_ bytes: ArraySlice<UInt8>) -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        guard bytes.contains(UInt8(ascii: "%")) else { return text }
        return text.removingPercentEncoding ?? text
    }
}

/// What to do when the target file already exists.
package enum ExistingFilePolicy: String, Sendable, CaseIterable, Codable {
    /// Pick `name.1.ext`, `name.2.ext`, ...
    case rename
    case overwrite
    /// Leave the file and report the download as done.
    case skip
}
