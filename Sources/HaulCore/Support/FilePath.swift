#if canImport(Glibc)
import Glibc
#endif

/// Path arithmetic on plain strings. (Foundation's NSString path methods crash on some short relative
/// paths on Linux, such as "o".) On the UTF-8 bytes, as the kernel reads a path: a `/` is a separator
/// whatever follows it (a combining mark after it does not hide it), and no Character is counted.
///
/// Every check of a name or a path that decides where bytes go is made here, on bytes: a String's own
/// `contains`, `hasPrefix`, `hasSuffix`, `split` and `==` work on Characters (grapheme clusters), and a `/`
/// or a `.` that a combining mark after it (U+0301), or a prepended letter before it (U+0D4E), joins into
/// one Character is not found there, though the kernel sees it. (`-O ../\u{301}x` once wrote beside the
/// output directory; a name ending in `\u{0D4E}.part` was not one of haul's own suffixes.)
package enum FilePath {
    /// Whether `text` holds a `/`, a separator to the kernel whatever Character it is part of.
    package static func hasSeparator(_ text: some StringProtocol) -> Bool {
        text.utf8.contains(UInt8(ascii: "/"))
    }

    /// The parts of `path` between its slashes (empty ones left out), split on the bytes.
    package static func components(of path: some StringProtocol) -> [Substring] {
        let path = Substring(path)
        var parts: [Substring] = []
        var start = path.startIndex
        var index = start
        while index != path.endIndex {
            if path.utf8[index] == UInt8(ascii: "/") {
                if start != index { parts.append(path[start..<index]) }
                start = path.utf8.index(after: index)
            }
            index = path.utf8.index(after: index)
        }
        if start != path.endIndex { parts.append(path[start...]) }
        return parts
    }

    /// Whether `text` begins with `prefix`, byte for byte.
    package static func hasPrefix(_ text: some StringProtocol, _ prefix: some StringProtocol) -> Bool {
        text.utf8.starts(with: prefix.utf8)
    }

    /// Whether `text` ends with `suffix`, byte for byte, on their contiguous bytes (a name's end is checked
    /// for haul's own suffixes at each download: a generic comparison took 1,500 instructions there).
    package static func hasSuffix(_ text: String, _ suffix: String) -> Bool {
        let (count, tail) = (text.utf8.count, suffix.utf8.count)
        guard count >= tail else { return false }
        let inPlace = text.utf8.withContiguousStorageIfAvailable { text in
            suffix.utf8.withContiguousStorageIfAvailable { suffix in
                tail == 0 || memcmp(text.baseAddress! + (count - tail), suffix.baseAddress!, tail) == 0
            }
        }
        if let inPlace, let inPlace { return inPlace }
        return text.utf8.suffix(tail).elementsEqual(suffix.utf8)
    }

    /// Whether `text` is `other`, byte for byte (`==` on Strings also takes canonically equivalent ones).
    package static func same(_ text: some StringProtocol, _ other: some StringProtocol) -> Bool {
        text.utf8.elementsEqual(other.utf8)
    }

    /// "a/b/c" -> "a/b"; "c" -> "."; "/c" -> "/"; trailing slashes ignored.
    package static func parent(of path: String) -> String {
        let trimmed = trimmingTrailingSlashes(path)
        guard let slash = trimmed.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        if slash == trimmed.startIndex { return "/" }
        return trimmingTrailingSlashes(String(trimmed[..<slash]))
    }

    /// "a/b/c" -> "c"; "c/" -> "c".
    package static func baseName(of path: String) -> String {
        let trimmed = trimmingTrailingSlashes(path)
        guard let slash = trimmed.utf8.lastIndex(of: UInt8(ascii: "/")) else { return trimmed }
        return String(trimmed[trimmed.utf8.index(after: slash)...])
    }

    /// "a" + "b" -> "a/b"; "a/" + "b" -> "a/b".
    package static func join(_ directory: String, _ name: String) -> String {
        directory.isEmpty ? name : (directory.utf8.last == UInt8(ascii: "/") ? directory + name : directory + "/" + name)
    }

    /// `path` against the current directory when relative; as it is when absolute.
    package static func absolute(_ path: String) -> String {
        if path.utf8.first == UInt8(ascii: "/") { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let cwd = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if same(path, ".") { return cwd }
        return join(cwd, hasPrefix(path, "./") ? String(path[path.utf8.index(path.startIndex, offsetBy: 2)...]) : path)
    }

    /// Without the slashes at its end, but "/" stays "/". (`Substring.count` walked every Character at each
    /// step: 2,000 instructions a download's end.)
    private static func trimmingTrailingSlashes(_ path: String) -> String {
        let bytes = path.utf8
        var end = bytes.endIndex
        var length = bytes.count
        while length > 1, bytes[bytes.index(before: end)] == UInt8(ascii: "/") {
            end = bytes.index(before: end)
            length -= 1
        }
        return end == bytes.endIndex ? path : String(path[..<end])
    }
}
