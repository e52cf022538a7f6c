import Glibc
import HaulCore

/// `haul-server`: `haul` with the per-user service and the sample server in it. `haul` starts it for the
/// service and `--demo`; it sits next to `haul` (a build's products) or in `../libexec/haul/` (an install).
package enum ServerExecutable {
    static let name = "haul-server"

    /// Its path: this process itself when it is `haul-server`, else where it sits beside this one.
    package static func path() throws(HaulError) -> String {
        let running = try runningExecutable()
        let slash = running.lastIndex(of: "/").map { running.index(after: $0) } ?? running.startIndex
        if running[slash...] == name { return running }
        let directory = String(running[..<slash])
        let candidates = [directory + name, directory + "../libexec/haul/" + name]
        for candidate in candidates where access(candidate, X_OK) == 0 { return candidate }
        throw HaulError(.other, "cannot find \(name), which runs the service and --demo (looked for "
                        + candidates.joined(separator: " and ") + ")")
    }

    /// The running program (`/proc/self/exe`).
    static func runningExecutable() throws(HaulError) -> String {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = buffer.withUnsafeMutableBufferPointer { pointer in
            pointer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: pointer.count) {
                readlink("/proc/self/exe", $0, pointer.count - 1)
            }
        }
        guard length > 0 else { throw HaulError(.other, "cannot find the haul executable (/proc/self/exe)") }
        return String(decoding: buffer[..<length], as: UTF8.self)
    }
}
