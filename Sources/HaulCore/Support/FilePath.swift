#if canImport(Glibc)
import Glibc
#endif

/// Path arithmetic on plain strings. (Foundation's NSString path methods crash on some short relative
/// paths on Linux, such as "o".)
package enum FilePath {
    /// "a/b/c" -> "a/b"; "c" -> "."; "/c" -> "/"; trailing slashes ignored.
    package static func parent(of path: String) -> String {
        let trimmed = trimmingTrailingSlashes(path)
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        if slash == trimmed.startIndex { return "/" }
        return trimmingTrailingSlashes(String(trimmed[..<slash]))
    }

    /// "a/b/c" -> "c"; "c/" -> "c".
    package static func baseName(of path: String) -> String {
        let trimmed = trimmingTrailingSlashes(path)
        guard let slash = trimmed.lastIndex(of: "/") else { return trimmed }
        return String(trimmed[trimmed.index(after: slash)...])
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

    private static func trimmingTrailingSlashes(_ path: String) -> String {
        var result = Substring(path)
        while result.count > 1, result.hasSuffix("/") { result = result.dropLast() }
        return String(result)
    }
}
