import SampleServer

/// Runs `body` against a fresh in-process sample server on 127.0.0.1 with an ephemeral port.
func withSampleServer<T>(rate: Int? = nil, jpegs: Bool = false,
                         _ body: (SampleServer) async throws -> T) async throws -> T {
    let server = try await SampleServer.start(SampleServerConfiguration(port: 0, rate: rate, jpegs: jpegs))
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
func expectedBytes(_ name: String) -> [UInt8] {
    let file = GeneratedFile.standardSet.first { $0.name == name }!
    return file.bytes(offset: 0, count: file.size)
}

struct TimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Runs `body`, failing with `TimedOut` if it has not finished after `seconds`.
func within<T: Sendable>(_ seconds: Double, _ what: String, _ body: @escaping @Sendable () async throws -> T)
    async throws -> T
{
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))  // a deadline, not synchronisation
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else { throw TimedOut(what: what) }
        return value
    }
}
