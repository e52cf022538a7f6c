import CLinux
import FoundationEssentials
import Glibc

/// Turns what a server or a URL suggests into a safe base name inside the output directory.
///
/// The result never contains `/`, `\`, NUL or other control characters, nor invisible ones (format
/// characters such as bidi marks and overrides, line and paragraph separators, surrogates, unassigned code
/// points), is never `.`, `..` or empty, never starts with a dot (no hidden files), and is at most
/// `maxBytes` UTF-8 bytes, keeping the extension.
package enum FileNaming {
    /// 255 (NAME_MAX) less room for what haul adds to a name: a rename's ".NNNNN", ".part.json", and the
    /// state file's temporary ".XXXXXXXX.tmp" (31 bytes at most).
    static let maxBytes = 224

    package static func sanitize(_ suggested: String) -> String {
        plainASCII(suggested).map(clearOfOwnSuffixes) ?? sanitizeScalars(suggested)
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
        return name.isEmpty ? "download" : clearOfOwnSuffixes(name)
    }

    /// The common case without the Unicode work (a thousand small files spent 6% of their user CPU here):
    /// the last `/`- or `\\`-separated part of `suggested` when it is printable ASCII that `sanitize` would
    /// return unchanged (not empty, at most `maxBytes`, no dot or space first, no space last); else nil.
    private static func plainASCII(_ suggested: String) -> String? {
        // On the contiguous bytes: the UTF8View's generic search and slicing took 1,700 instructions a name.
        var copy = suggested
        let start = copy.withUTF8 { bytes -> Int? in
            var start = bytes.count
            while start > 0, bytes[start - 1] != UInt8(ascii: "/"), bytes[start - 1] != UInt8(ascii: "\\") { start -= 1 }
            let component = UnsafeBufferPointer(rebasing: bytes[start...])
            guard let first = component.first, let last = component.last, component.count <= maxBytes,
                first != UInt8(ascii: "."), first != UInt8(ascii: " "), last != UInt8(ascii: " "),
                component.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E })
            else { return nil }
            return start
        }
        guard let start else { return nil }
        // The name itself when it has no directory part (the usual case): no copy, no second validation.
        return start == 0 ? suggested : String(suggested[suggested.utf8.index(suggested.startIndex, offsetBy: start)...])
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
        if FilePath.same(name, ".") || FilePath.same(name, "..") { return "is not a file name" }
        if FilePath.hasSeparator(name) { return "is a path, not a file name" }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "contains control characters"
        }
        if name.utf8.count > maxBytes {
            return "is longer than \(maxBytes) bytes (haul adds up to \(255 - maxBytes) to it for its partial download's files)"
        }
        if ownSuffix(of: name) != nil {
            return "ends in .part, .part.json or .part.journal, the names haul keeps partial downloads under"
        }
        return nil
    }

    /// The suffixes of haul's own files beside a download (`NAME.part`, its state and its journal): no
    /// download is named so, or a later download of `NAME` would take that finished file for its part.
    static let ownSuffixes = [".part", ".part.json", ".part.journal"]

    /// By the bytes (`FilePath`): the name the file system compares.
    static func ownSuffix(of name: String) -> String? {
        ownSuffixes.first { FilePath.hasSuffix(name, $0) && name.utf8.count > $0.utf8.count }
    }

    /// `name`, with its last `.` made `_` when it ends in one of `ownSuffixes` (`data.bin.part` ->
    /// `data.bin_part`, `x.part.json` -> `x.part_json`): as long, and no longer one of haul's.
    static func clearOfOwnSuffixes(_ name: String) -> String {
        guard ownSuffix(of: name) != nil, let dot = name.utf8.lastIndex(of: UInt8(ascii: ".")) else { return name }
        return name[..<dot] + "_" + name[name.utf8.index(after: dot)...]
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
    static func split(_ name: String) -> (stem: String, ext: String) {
        guard let dot = name.utf8.lastIndex(of: UInt8(ascii: ".")), dot != name.startIndex else { return (name, "") }
        return (String(name[..<dot]), String(name[dot...]))
    }

    /// The `n`th name tried for `name` (`ExistingFilePolicy.rename`): `name` itself for 0, else `stem.N.ext`.
    /// The split is made only past the first, which is usually free.
    static func numbered(_ name: String, _ n: Int) -> String {
        guard n > 0 else { return name }
        let (stem, ext) = split(name)
        return "\(stem).\(n)\(ext)"
    }

    /// The name a download gets: Content-Disposition first, then the URL's last path segment.
    static func name(contentDisposition: String?, url: String) -> String {
        if let header = contentDisposition, let suggested = filename(fromContentDisposition: header) {
            return sanitize(suggested)
        }
        return sanitize(lastPathSegment(of: url))
    }

    /// The file name of a `Content-Disposition` value, read as RFC 6266 writes it: a disposition type, then
    /// `; name=value` parameters (a token or a quoted string). `filename*` (RFC 8187: `UTF-8''...` or
    /// `ISO-8859-1''...`, percent-encoded) wins over `filename`; a `filename*` with bad escapes, another
    /// charset or bytes its charset does not fit is left out. A value that breaks the syntax (no disposition
    /// type, a parameter twice, an unclosed quote, a character a token may not hold, parameters not
    /// separated by `;`) makes the whole header meaningless: nil, and the name comes from the URL. A quoted
    /// `filename` with bytes past ASCII arrives as UTF-8 when they are valid UTF-8, else as ISO-8859-1
    /// (`ResponseHead.Builder`).
    static func filename(fromContentDisposition header: String) -> String? {
        guard let parameters = ContentDisposition.parameters(of: header) else { return nil }
        var plain: String?
        var extended: String?
        for parameter in parameters {
            switch parameter.name.lowercased() {
            case "filename*":
                extended = parameter.quoted ? nil : ContentDisposition.extendedValue(parameter.value)
            case "filename":
                plain = parameter.value
            default:
                break
            }
        }
        return [extended, plain].compactMap { $0 }.first { !$0.isEmpty }
    }

    /// The URL's last non-empty path segment, percent-decoded; "index.html" for a bare host or directory.
    /// A bare query naming a file (`/files/download?photo.jpg`, no `=` or `&`) names it instead.
    package static func lastPathSegment(of url: String) -> String {
        // On the UTF-8 bytes in place: every delimiter is ASCII, and this runs for every queued URL (a copy of
        // them into an array and a generic search for "://" took half of its 2,000 instructions).
        var url = url
        return url.withUTF8 { bytes in
            var start = 0
            var end = bytes.count
            if let scheme = schemeEnd(in: bytes) { start = scheme + 3 }
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
    }

    /// Where the first "://" starts.
    private static func schemeEnd(in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard bytes.count >= 3 else { return nil }
        for at in 0...(bytes.count - 3)
        where bytes[at] == UInt8(ascii: ":") && bytes[at + 1] == UInt8(ascii: "/") && bytes[at + 2] == UInt8(ascii: "/") {
            return at
        }
        return nil
    }

    /// Percent-decoded when it holds an escape (and the escapes are valid UTF-8), else as it is.
    private static func decoded(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        guard bytes.contains(UInt8(ascii: "%")) else { return text }
        return text.percentDecoded ?? text
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

/// RFC 6266's grammar for `Content-Disposition`, over the header's Unicode scalars.
enum ContentDisposition {
    struct Parameter {
        var name: String
        var value: String
        /// Written as a quoted string (`filename*` may not be).
        var quoted: Bool
    }

    /// The parameters after the disposition type, nil when the header is not valid syntax.
    static func parameters(of header: String) -> [Parameter]? {
        let text = Array(header.unicodeScalars)
        var index = 0
        func skipSpace() {
            while index < text.count, text[index] == " " || text[index] == "\t" { index += 1 }
        }
        func token() -> String? {
            let start = index
            while index < text.count, isTokenCharacter(text[index]) { index += 1 }
            guard index > start else { return nil }
            return String(String.UnicodeScalarView(text[start..<index]))
        }
        skipSpace()
        guard token() != nil else { return nil }  // the disposition type
        var result: [Parameter] = []
        var names = Set<String>()
        skipSpace()
        while index < text.count {
            guard text[index] == ";" else { return nil }
            index += 1
            skipSpace()
            if index == text.count { break }  // a trailing `;`
            guard let name = token() else { return nil }
            skipSpace()
            guard index < text.count, text[index] == "=" else { return nil }
            index += 1
            skipSpace()
            var parameter = Parameter(name: name, value: "", quoted: false)
            if index < text.count, text[index] == "\"" {
                index += 1
                var value = String.UnicodeScalarView()
                var closed = false
                while index < text.count {
                    let scalar = text[index]
                    index += 1
                    if scalar == "\"" {
                        closed = true
                        break
                    }
                    if scalar == "\\" {
                        guard index < text.count else { return nil }
                        value.append(text[index])
                        index += 1
                    } else {
                        guard scalar == "\t" || scalar.value >= 0x20, scalar.value != 0x7F else { return nil }
                        value.append(scalar)
                    }
                }
                guard closed else { return nil }
                parameter.value = String(value)
                parameter.quoted = true
            } else {
                guard let value = token() else { return nil }
                parameter.value = value
            }
            // A parameter named twice (two `filename`s): which one the server meant is anyone's guess.
            guard names.insert(name.lowercased()).inserted else { return nil }
            result.append(parameter)
            skipSpace()
        }
        return result
    }

    /// `filename*`'s value (RFC 8187 `charset'language'value-chars`), decoded; nil when it cannot be.
    static func extendedValue(_ value: String) -> String? {
        let pieces = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard pieces.count == 3 else { return nil }
        var bytes: [UInt8] = []
        var encoded = Array(pieces[2].utf8)[...]
        while let byte = encoded.popFirst() {
            if byte == UInt8(ascii: "%") {
                guard encoded.count >= 2, let high = encoded.removeFirst().hexDigitValue,
                    let low = encoded.removeFirst().hexDigitValue
                else { return nil }
                bytes.append(high << 4 | low)
            } else {
                guard isAttributeCharacter(byte) else { return nil }
                bytes.append(byte)
            }
        }
        switch pieces[0].lowercased() {
        case "utf-8": return String(validating: bytes, as: UTF8.self)
        case "iso-8859-1":
            // Its graphic characters only: a byte of C0, DEL or C1 (0x80-0x9F) is no ISO-8859-1 text, and such
            // bytes are most often UTF-8 sent under the wrong label (tc2231's `attwithfn2231utf8-bad`:
            // `%e2%82%ac`, the euro sign's UTF-8, holds 0x82).
            guard bytes.allSatisfy({ (0x20..<0x7F).contains($0) || $0 >= 0xA0 }) else { return nil }
            return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        default: return nil
        }
    }

    /// RFC 9110's `tchar`.
    static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        guard scalar.isASCII else { return false }
        switch UInt8(scalar.value) {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case let byte:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// RFC 8187's `attr-char`: a token character other than `%`, `'` and `*`.
    static func isAttributeCharacter(_ byte: UInt8) -> Bool {
        byte != UInt8(ascii: "%") && byte != UInt8(ascii: "'") && byte != UInt8(ascii: "*")
            && isTokenCharacter(Unicode.Scalar(byte))
    }
}
