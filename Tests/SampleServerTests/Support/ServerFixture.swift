import Foundation
import SampleServer
import TestSupport

/// Small files so tests stay fast; `medium.bin` is big enough for multi-connection clients.
let testFiles = [
    GeneratedFile(name: "tiny.bin", size: 1_000),
    GeneratedFile(name: "small.bin", size: 1 << 20),
    GeneratedFile(name: "medium.bin", size: 20 << 20),
    GeneratedFile(name: "empty.bin", size: 0),
]

func file(_ name: String) -> GeneratedFile {
    testFiles.first { $0.name == name }!
}

/// Runs `body` against a fresh in-process server on an ephemeral port, and stops the server afterwards.
func withServer<T>(
    _ configuration: SampleServerConfiguration = SampleServerConfiguration(port: 0, files: testFiles, jpegs: false),
    _ body: (SampleServer) async throws -> T
) async throws -> T {
    try await withSampleServer(configuration, body)
}

/// The download target for `name`, as a path plus query.
func downloadTarget(_ name: String) -> String {
    "/files/download?\(name)"
}
