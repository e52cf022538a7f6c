import Foundation
import SampleServer
import NIOConcurrencyHelpers

/// Runs `body` against a fresh in-process sample server on 127.0.0.1 with an ephemeral port.
public func withSampleServer<T>(rate: Int? = nil, jpegs: Bool = false,
                                _ body: (SampleServer) async throws -> T) async throws -> T {
    try await withSampleServer(SampleServerConfiguration(port: 0, rate: rate, jpegs: jpegs), body)
}

/// Runs `body` against a fresh in-process sample server started with `configuration`, and stops it after.
public func withSampleServer<T>(_ configuration: SampleServerConfiguration,
                                _ body: (SampleServer) async throws -> T) async throws -> T {
    let server = try await SampleServer.start(configuration)
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

/// The bytes the sample server serves for a generated file.
public func expectedBytes(_ name: String) -> [UInt8] {
    let file = generatedFile(name)
    return file.bytes(offset: 0, count: file.size)
}

public func generatedFile(_ name: String) -> GeneratedFile {
    GeneratedFile.standardSet.first { $0.name == name }!
}

/// The sha256 of a generated file as the server serves it, computed from the generator in 1 MiB pieces.
public func expectedSHA256(_ name: String) -> String {
    expectedSHA256(of: generatedFile(name))
}

/// The sha256 of any generated file (one a test adds to the server's set). Computed once a file: the suite
/// asks for medium.bin's (20 MiB) dozens of times.
public func expectedSHA256(of file: GeneratedFile) -> String {
    if let known = knownDigests.withLockedValue({ $0[file] }) { return known }
    let digest = computedSHA256(of: file)
    knownDigests.withLockedValue { $0[file] = digest }
    return digest
}

/// A pthread lock, which the thread sanitizer sees (Synchronization's Mutex is a futex it does not).
private let knownDigests = NIOLockedValueBox<[GeneratedFile: String]>([:])

private func computedSHA256(of file: GeneratedFile) -> String {
    let hasher = OpenSSLDigest(.sha256)
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    var offset = 0
    while offset < file.size {
        let count = min(buffer.count, file.size - offset)
        buffer.withUnsafeMutableBytes { file.fill(UnsafeMutableRawBufferPointer(rebasing: $0[..<count]), offset: offset) }
        buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
        offset += count
    }
    return hasher.hex()
}

public struct TimedOut: Error, CustomStringConvertible {
    public let what: String
    public var description: String { "timed out waiting for \(what)" }
}

/// `within` with a time bound that stretches under a sanitizer (`TestEnvironment.bound`).
public func within<T: Sendable>(_ bound: Duration, _ what: String, _ body: @escaping @Sendable () async throws -> T)
    async throws -> T
{
    try await deadline(TestEnvironment.bound(bound), what, body)
}

/// Runs `body`, failing with `TimedOut` if it has not finished after `seconds`, stretched for this build as
/// every bound here (`TestEnvironment.bound`: `within(10, ...)` with a plain number used to escape the
/// stretch, and a TSan run at its busiest missed a 10 s deadline).
public func within<T: Sendable>(_ seconds: Double, _ what: String, _ body: @escaping @Sendable () async throws -> T)
    async throws -> T
{
    try await deadline(TestEnvironment.bound(.milliseconds(Int(seconds * 1_000))), what, body)
}

private func deadline<T: Sendable>(_ limit: Duration, _ what: String, _ body: @escaping @Sendable () async throws -> T)
    async throws -> T
{
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try? await Task.sleep(for: limit)  // a deadline, not synchronisation
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else { throw TimedOut(what: what) }
        return value
    }
}
