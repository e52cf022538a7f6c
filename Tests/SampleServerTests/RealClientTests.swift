import Foundation
import SampleServer
import Testing

/// Downloads from the in-process server with the real tools, when they are installed.
@Suite("Real download clients")
struct RealClientTests {
    static let curl = executable("curl")
    static let wget2 = executable("wget2")
    static let aria2c = executable("aria2c")

    @Test(.enabled(if: curl != nil, "curl is not installed"))
    func curlDownloadsMediumBin() async throws {
        try await download { server, output in
            try await run(Self.curl!, ["-sS", "-o", output.path, server.downloadURL("medium.bin")])
        }
    }

    @Test(.enabled(if: wget2 != nil, "wget2 is not installed"))
    func wget2DownloadsMediumBin() async throws {
        try await download { server, output in
            try await run(Self.wget2!, ["-q", "-O", output.path, server.downloadURL("medium.bin")])
        }
    }

    @Test(.enabled(if: aria2c != nil, "aria2c is not installed"))
    func aria2cDownloadsMediumBinInFourParts() async throws {
        try await download(rate: 16 << 20) { server, output in
            try await run(
                Self.aria2c!,
                [
                    "-q", "-x4", "-s4", "-k1M", "--allow-overwrite=true", "--auto-file-renaming=false",
                    "-d", output.deletingLastPathComponent().path, "-o", output.lastPathComponent,
                    server.downloadURL("medium.bin"),
                ])
            #expect(server.stats.rangeRequests >= 2, "aria2c split the file")
        }
    }

    @Test(.enabled(if: curl != nil, "curl is not installed"))
    func curlSeesADroppedConnectionAsAPartialTransfer() async throws {
        try await withServer { server in
            var faults = SampleServerFaults()
            faults.dropAfterBytes = 300_000
            server.setFaults(faults)
            let directory = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let output = directory.appendingPathComponent("medium.bin")
            let result = try await run(Self.curl!, ["-sS", "-o", output.path, server.downloadURL("medium.bin")], check: false)
            #expect(result.status == 18, "CURLE_PARTIAL_FILE")
            #expect(result.standardError.contains("transfer closed with \((20 << 20) - 300_000) bytes remaining"))
            #expect(try Data(contentsOf: output).count == 300_000)
        }
    }

    /// `rate` throttles each connection, so a multi-connection client has time to open its others.
    private func download(rate: Int? = nil, _ fetch: (SampleServer, URL) async throws -> Void) async throws {
        let configuration = SampleServerConfiguration(port: 0, rate: rate, files: testFiles, jpegs: false)
        try await withServer(configuration) { server in
            let directory = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let output = directory.appendingPathComponent("medium.bin")
            try await fetch(server, output)
            let downloaded = try Data(contentsOf: output)
            #expect(downloaded.count == 20 << 20)
            #expect(downloaded == Data(file("medium.bin").bytes(offset: 0, count: 20 << 20)))
        }
    }
}

private func executable(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}

private func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("haul-clients-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

private struct ProcessResult {
    let status: Int32
    let standardError: String
}

/// Runs a tool to completion without blocking a concurrency thread, and returns its exit status and stderr.
@discardableResult
private func run(_ tool: String, _ arguments: [String], check: Bool = true) async throws -> ProcessResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments
    let errorFile = FileManager.default.temporaryDirectory.appendingPathComponent("haul-stderr-\(UUID().uuidString)")
    _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
    defer { try? FileManager.default.removeItem(at: errorFile) }
    let errorHandle = try FileHandle(forWritingTo: errorFile)
    process.standardError = errorHandle
    process.standardOutput = FileHandle.nullDevice
    let status: Int32 = try await withCheckedThrowingContinuation { continuation in
        process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
        do {
            try process.run()
        } catch {
            process.terminationHandler = nil
            continuation.resume(throwing: error)
        }
    }
    try errorHandle.close()
    let standardError = try String(contentsOf: errorFile, encoding: .utf8)
    if check {
        #expect(status == 0, "\(tool) failed: \(standardError)")
    }
    return ProcessResult(status: status, standardError: standardError)
}
