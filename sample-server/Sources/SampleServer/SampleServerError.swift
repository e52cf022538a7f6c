/// A problem that keeps a ``SampleServer`` from starting, such as an unusable `--root` directory.
public struct SampleServerError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, in one line.
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
