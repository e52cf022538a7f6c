#if canImport(Glibc)
import Glibc
#endif

/// Path arithmetic on plain strings. (Foundation's NSString path methods crash on some short relative
/// paths on Linux, such as "o".) On the UTF-8 bytes, as the kernel reads a path: a `/` is a separator
/// whatever follows it (a combining mark after it does not hide it), and no Character is counted.
package enum FilePath {
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
        directory.isEmpty ? name : (directory.hasSuffix("/") ? directory + name : directory + "/" + name)
    }

    /// `path` against the current directory when relative; as it is when absolute.
    package static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let cwd = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return path == "." ? cwd : join(cwd, path.hasPrefix("./") ? String(path.dropFirst(2)) : path)
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
