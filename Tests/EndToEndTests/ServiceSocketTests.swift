import Foundation
import Testing
import TestSupport

/// The control socket's path and what may be found there, and what the socket takes: a file or a link
/// planted at `haul.sock` is neither connected through, bound over nor removed, and a body too large for
/// the control API is refused in words.
@Suite struct ServiceSocketTests {
    static func haul(_ arguments: [String], _ home: ServiceHome, in dir: TempDirectory) async throws -> HaulProcess.Exit {
        try await HaulProcess.run(arguments, in: dir.path, environment: home.environment)
    }

    static func prepare(_ home: ServiceHome) throws {
        try FileManager.default.createDirectory(atPath: home.path, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
    }

    /// A regular file at `haul.sock` stays byte for byte: the service that cannot bind says what is in the
    /// way, and does not remove it as it ends (it did: a file holding "precious" vanished).
    @Test func aFileAtTheSocketsPathIsNamedAndKept() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        try Self.prepare(home)
        try "precious\n".write(toFile: home.socket, atomically: false, encoding: .utf8)
        for arguments in [["ls"], ["service", "start"], ["add", "http://127.0.0.1:1/x.bin"]] {
            let exit = try await Self.haul(arguments, home, in: dir)
            #expect(exit.status == 1, "\(arguments): \(exit)")
            #expect(exit.stderr.split(separator: "\n").count == 1, "\(arguments): \(exit.stderr)")
            #expect(exit.stderr.contains("haul.sock is a regular file"), "\(arguments): \(exit.stderr)")
            #expect(try String(contentsOfFile: home.socket, encoding: .utf8) == "precious\n", "\(arguments)")
        }
        // In the foreground too, where the service itself meets it.
        let run = try await Self.haul(["service", "run"], home, in: dir)
        #expect(run.status == 1, "\(run)")
        #expect(run.stderr.contains("haul.sock is a regular file"), "\(run.stderr)")
        #expect(try String(contentsOfFile: home.socket, encoding: .utf8) == "precious\n")
    }

    /// A link at `haul.sock` to another service's socket is not followed: `haul ls` and `haul add` reached the
    /// other queue through it. The link stays, and so does the other service's queue, untouched.
    @Test func aLinkAtTheSocketsPathIsNeverConnectedThrough() async throws {
        let other = ServiceHome()
        let home = ServiceHome()
        let dir = TempDirectory()
        let started = try await Self.haul(["service", "start"], other, in: dir)
        #expect(started.status == 0, "\(started)")
        try Self.prepare(home)
        try FileManager.default.createSymbolicLink(atPath: home.socket, withDestinationPath: other.socket)

        for arguments in [["ls"], ["add", "http://127.0.0.1:1/planted.bin"], ["service", "start"]] {
            let exit = try await Self.haul(arguments, home, in: dir)
            #expect(exit.status == 1, "\(arguments): \(exit)")
            #expect(exit.stderr.split(separator: "\n").count == 1, "\(arguments): \(exit.stderr)")
            #expect(exit.stderr.contains("haul.sock is a symbolic link"), "\(arguments): \(exit.stderr)")
        }
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: home.socket) == other.socket)
        let listed = try await Self.haul(["ls", "--json"], other, in: dir)
        #expect(listed.status == 0 && listed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]", "\(listed)")
    }

    /// A body past the control API's 64 MiB is refused (413) in words: one that says its length before a
    /// byte of it is read, one sent in chunks as it passes the limit. It was buffered to 64 MiB and
    /// answered with an internal type's name (`NIOTooManyBytesError(...)`).
    @Test func aBodyTooLargeIsRefusedInWords() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        let started = try await Self.haul(["service", "start"], home, in: dir)
        #expect(started.status == 0, "\(started)")
        let body = dir.file("body.json")
        #expect(FileManager.default.createFile(atPath: body, contents: nil))
        #expect(truncate(body, 100 << 20) == 0)
        for chunked in [false, true] {
            var arguments = ["-sS", "--unix-socket", home.socket, "-o", "-", "-w", "\n%{http_code}",
                             "-H", "Content-Type: application/json", "--data-binary", "@" + body]
            if chunked { arguments += ["-H", "Transfer-Encoding: chunked"] }
            let exit = try await HaulProcess.run(arguments + ["http://localhost/v1/downloads"], in: dir.path,
                                                 binary: "/usr/bin/curl")
            let lines = exit.stdout.split(separator: "\n")
            #expect(lines.last == "413", "chunked \(chunked): \(exit)")
            #expect(exit.stdout.contains("larger than the 64 MiB the control socket takes"), "chunked \(chunked): \(exit)")
            #expect(!exit.stdout.contains("NIO"), "chunked \(chunked): \(exit)")
        }
        // The service goes on.
        #expect(try await Self.haul(["ls"], home, in: dir).status == 0)
    }

    /// `haul service start|run` take `-o` for `--output-dir`, as every other command does.
    @Test func theServiceTakesDashO() async throws {
        let home = ServiceHome()
        let dir = TempDirectory()
        let exit = try await Self.haul(["service", "start", "-o", dir.file("downloads")], home, in: dir)
        #expect(exit.status == 0, "\(exit)")
        let help = try await Self.haul(["service", "run", "--help"], home, in: dir)
        #expect(help.stdout.contains("-o, --output-dir"), "\(help)")
    }
}
