import Foundation
import Synchronization

/// A fresh directory under the system temp dir, removed when the value is released.
public final class TempDirectory: Sendable {
    public let path: String
    private let removed = Mutex(false)

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
    public func remove() {
        guard removed.withLock({ done in defer { done = true }; return !done }) else { return }
        do {
            try FileManager.default.removeItem(atPath: path)
        } catch {
            // Said, so that a test whose child process still writes here when it ends is found.
            FileHandle.standardError.write(Data("TempDirectory: cannot remove \(path): \(error)\n".utf8))
        }
    }

    public func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }

    public func contents(_ name: String) -> [UInt8]? {
        FileManager.default.contents(atPath: file(name)).map { [UInt8]($0) }
    }

    public func listing() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }
}
