#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A directory of real files served by name, confined to that directory.
///
/// A name is a single path component: no `/`, no `..`, no NUL or control characters, no leading `.`. Even then a
/// name is only served when its fully resolved path (symlinks followed) is a regular file inside the directory.
struct RootDirectory: Sendable {
    /// The directory's canonical absolute path.
    let path: String

    init(path: String) throws(SampleServerError) {
        guard let resolved = Self.realPath(path) else {
            throw SampleServerError("root directory \(path) does not exist")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: resolved, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw SampleServerError("root \(path) is not a directory")
        }
        self.path = resolved
    }

    func file(named name: String) -> ServedFile? {
        guard Self.isPlainName(name), let resolved = Self.realPath(path + "/" + name),
            resolved.hasPrefix(path == "/" ? "/" : path + "/"),
            let attributes = try? FileManager.default.attributesOfItem(atPath: resolved),
            attributes[.type] as? FileAttributeType == .typeRegular,
            let size = (attributes[.size] as? NSNumber)?.intValue
        else { return nil }
        let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        return ServedFile(name: name, size: size, modified: Int(modified), content: .disk(resolved))
    }

    func files() -> [ServedFile] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.compactMap(file(named:))
    }

    static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && !name.hasPrefix(".") && !name.contains("/") && !name.contains("..")
            && !name.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
