import Foundation
import SampleServer
import Testing

@Suite("Serving a root directory")
struct RootDirectoryTests {
    /// A root with a real file, a subdirectory, a hidden file, and symlinks pointing inside and outside.
    private func makeRoot() throws -> (root: URL, outside: URL) {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("haul-root-\(UUID().uuidString)")
        let root = base.appendingPathComponent("root")
        let outside = base.appendingPathComponent("secret.txt")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try Data("outside the root\n".utf8).write(to: outside)
        try Data("hello from the root\n".utf8).write(to: root.appendingPathComponent("notes.txt"))
        try Data("hidden\n".utf8).write(to: root.appendingPathComponent(".hidden"))
        try Data("nested\n".utf8).write(to: root.appendingPathComponent("sub/nested.txt"))
        try FileManager.default.createSymbolicLink(
            atPath: root.appendingPathComponent("escape.txt").path, withDestinationPath: outside.path)
        try FileManager.default.createSymbolicLink(
            atPath: root.appendingPathComponent("alias.txt").path, withDestinationPath: "notes.txt")
        return (root, outside)
    }

    @Test func servesRegularFilesByName() async throws {
        let (root, _) = try makeRoot()
        defer { try? FileManager.default.removeItem(at: root.deletingLastPathComponent()) }
        let config = SampleServerConfiguration(port: 0, root: root.path, files: testFiles, jpegs: false)
        try await withServer(config) { server in
            let response = try await RawHTTPClient.fetch(from: server, downloadTarget("notes.txt"))
            #expect(response.status == 200)
            #expect(String(decoding: response.body, as: UTF8.self) == "hello from the root\n")
            let range = try await RawHTTPClient.fetch(
                from: server, downloadTarget("notes.txt"), headers: ["Range": "bytes=6-9"])
            #expect(range.status == 206)
            #expect(String(decoding: range.body, as: UTF8.self) == "from")
            let alias = try await RawHTTPClient.fetch(from: server, downloadTarget("alias.txt"))
            #expect(alias.status == 200)
            let names = server.catalog.map(\.name)
            #expect(names.contains("notes.txt") && names.contains("alias.txt"))
            #expect(!names.contains("escape.txt") && !names.contains(".hidden") && !names.contains("sub"))
        }
    }

    @Test func pathEscapesAre404() async throws {
        let (root, outside) = try makeRoot()
        defer { try? FileManager.default.removeItem(at: root.deletingLastPathComponent()) }
        let config = SampleServerConfiguration(port: 0, root: root.path, files: testFiles, jpegs: false)
        try await withServer(config) { server in
            let attempts = [
                "../secret.txt",
                "%2e%2e/secret.txt",
                "%2E%2E%2Fsecret.txt",
                "..%2fsecret.txt",
                outside.path,
                outside.path.replacingOccurrences(of: "/", with: "%2F"),
                "escape.txt",
                ".hidden",
                "sub",
                "sub/nested.txt",
                "sub%2Fnested.txt",
                "notes.txt%00.bin",
                ".",
                "..",
            ]
            for name in attempts {
                let response = try await RawHTTPClient.fetch(from: server, downloadTarget(name))
                #expect(response.status == 404, "\(name)")
                #expect(!String(decoding: response.body, as: UTF8.self).contains("outside"), "\(name)")
            }
        }
    }

    @Test func aMissingRootFailsToStart() async throws {
        await #expect(throws: SampleServerError.self) {
            _ = try await SampleServer.start(SampleServerConfiguration(port: 0, root: "/nonexistent/haul", jpegs: false))
        }
    }
}
