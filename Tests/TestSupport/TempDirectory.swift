import Foundation

/// A fresh directory under the system temp dir, removed when the value is released.
public final class TempDirectory: Sendable {
    public let path: String

    public init() {
        let base = FileManager.default.temporaryDirectory.path
        var template = Array("\(base)/haul-test-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        path = String(cString: template.withUnsafeBufferPointer { $0.baseAddress! })
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    public func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }

    public func contents(_ name: String) -> [UInt8]? {
        FileManager.default.contents(atPath: file(name)).map { [UInt8]($0) }
    }

    public func listing() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }
}
