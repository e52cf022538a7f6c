import Glibc

/// What a front end hears about a run of downloads; ids count from 1 in the order given.
public enum ReportEvent: Sendable, Equatable {
    case started(id: Int, url: String, file: String, path: String, total: Int64?)
    case progress(id: Int, url: String, file: String, DownloadProgress)
    case notice(id: Int, url: String, file: String, message: String)
    case done(id: Int, url: String, result: DownloadResult, seconds: Double)
    case failed(id: Int, url: String, file: String, error: HaulError)
    case summary(RunSummary)
}

/// The totals of a run, and its exit code.
public struct RunSummary: Sendable, Equatable {
    public var completed = 0
    public var failed = 0
    public var bytes: Int64 = 0
    public var seconds = 0.0
    public var exitCode: Int32 = 0

    public init() {}
}

/// Receives a run's events, from any task.
public protocol Reporter: Sendable {
    func report(_ event: ReportEvent)
}

/// Where reporters write: whole lines, to standard output and standard error.
public struct TextOutput: Sendable {
    public let out: @Sendable (String) -> Void
    public let err: @Sendable (String) -> Void

    public init(out: @escaping @Sendable (String) -> Void, err: @escaping @Sendable (String) -> Void) {
        self.out = out
        self.err = err
    }

    /// The process's stdout and stderr, each line written with one `write(2)`.
    public static let standard = TextOutput(out: { writeLine($0, to: 1) }, err: { writeLine($0, to: 2) })

    private static func writeLine(_ line: String, to fd: Int32) {
        var bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { buffer in
                Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            offset += n
        }
    }
}

/// The one-line failure message of the SPEC: `haul: NAME: what happened (URL)`.
public func failureLine(file: String, url: String, error: HaulError) -> String {
    "haul: \(file): \(error.message) (\(url))"
}
