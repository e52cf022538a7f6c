import Foundation
import Glibc

/// Times and file helpers shared by the store's tests.
enum StoreFixtures {
    /// A whole-millisecond time (the store keeps milliseconds), in November 2023.
    static func time(_ seconds: Double) -> Date {
        Date(timeIntervalSince1970: 1_700_000_000 + seconds)
    }

    static func mode(of path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o777
    }
}
