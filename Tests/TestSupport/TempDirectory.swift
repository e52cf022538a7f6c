import Foundation
import NIOConcurrencyHelpers

/// A fresh directory under the system temp dir, removed when the value is released.
public final class TempDirectory: Sendable {
    public let path: String
    private let removed = NIOLockedValueBox(false)

    /// Named after the line that made it (`haul-test-ResumeTests-84-XXXXXX`), so that one left behind says
    /// which test held on to it past its end.
    public init(fileID: String = #fileID, line: Int = #line) {
        let base = FileManager.default.temporaryDirectory.path
        let file = fileID.split(separator: "/").last.map { $0.replacingOccurrences(of: ".swift", with: "") } ?? "test"
        var template = Array("\(base)/haul-test-\(file)-\(line)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        path = String(cString: template.withUnsafeBufferPointer { $0.baseAddress! })
    }

    deinit {
        remove()
    }

    /// Removes the directory now (once; the release does nothing after it): for a holder whose last
    /// reference may outlive the process's end, such as a thread the process does not wait to be destroyed.
    ///
    /// A service a test started may still be writing here as the test ends (its state files are written
    /// to a temporary name and renamed): an entry gone before its turn is no error, and a directory that a
    /// writer refilled meanwhile is walked again. One that still cannot go is tried once more at the
    /// process's exit, after the tests' services are stopped (`removeLeftBehind`).
    public func remove() {
        guard removed.withLockedValue({ done in defer { done = true }; return !done }) else { return }
        for _ in 0..<3 {
            if Self.removeTree(path) == 0 { return }
        }
        Self.leftBehind.withLockedValue { $0.append(path) }
        _ = Self.removeAtExit
    }

    // MARK: what a writer left

    private static let leftBehind = NIOLockedValueBox<[String]>([])

    /// Registers `removeLeftBehind` to run at exit, once.
    private static let removeAtExit: Void = { atexit { TempDirectory.removeLeftBehind() } }()

    /// Removes the directories whose removal failed while something still wrote there; says which cannot
    /// go even now (a test whose child process outlives it is then found by its name).
    static func removeLeftBehind() {
        let paths = leftBehind.withLockedValue { paths in defer { paths = [] }; return paths }
        for path in paths {
            let failure = removeTree(path)
            if failure != 0 {
                let reason = String(cString: strerror(failure))
                FileHandle.standardError.write(Data("TempDirectory: cannot remove \(path): \(reason)\n".utf8))
            }
        }
    }

    /// `rm -rf path`, never following a symbolic link: 0, or the errno of what could not be removed. An
    /// entry that is gone by the time its turn comes (renamed or removed by another process) is no error.
    public static func removeTree(_ path: String) -> Int32 {
        var info = stat()
        guard lstat(path, &info) == 0 else { return errno == ENOENT ? 0 : errno }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { return unlink(path) == 0 || errno == ENOENT ? 0 : errno }
        guard let directory = opendir(path) else { return errno == ENOENT ? 0 : errno }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(directory)
        for name in names {
            let failure = removeTree(path + "/" + name)
            if failure != 0 { return failure }
        }
        return rmdir(path) == 0 || errno == ENOENT ? 0 : errno
    }

    public func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }

    public func contents(_ name: String) -> [UInt8]? {
        FileManager.default.contents(atPath: file(name)).map { [UInt8]($0) }
    }

    public func listing() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }
}

/// Writes `text` to `path` as a program (mode 0755), through a descriptor that no program started meanwhile
/// keeps (O_CLOEXEC). A script written with `String.write` has its descriptor open without it: a test beside
/// this one that starts a program in that moment hands the descriptor on, and for as long as that program
/// runs, running the script fails with ETXTBSY ("Text file busy": a RefreshTests run saw it).
public func writeScript(_ text: String, to path: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
    guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    defer { close(fd) }
    let bytes = Array(text.utf8)
    var written = 0
    while written < bytes.count {
        let count = bytes[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        written += count
    }
    guard fchmod(fd, 0o755) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
}
