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
    package static func numbered(_ name: String, _ n: Int) -> String {
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
