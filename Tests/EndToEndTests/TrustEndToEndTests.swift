import Foundation
import HaulCore
import SampleServer
import TestSupport
import Testing

/// The real binary against hostile conditions: two processes racing for one name, a wrong range, and a
/// password that must appear nowhere.
@Suite struct TrustEndToEndTests {
    @Test func twoProcessesDownloadingOneNameNeverShareAFile() async throws {
        let dir = TempDirectory()
        let same = GeneratedFile(name: "same.bin", size: 64 << 10)
        try await withSampleServer(SampleServerConfiguration(port: 0, files: [same], jpegs: false)) { server in
            // 150 URLs each, all served as same.bin (Content-Disposition); the fragment makes them distinct.
            for list in ["a", "b"] {
                let urls = (0..<150).map { server.downloadURL("same.bin") + "#\(list)\($0)" }
                _ = FileManager.default.createFile(atPath: dir.file("\(list).txt"),
                                                   contents: Data(urls.joined(separator: "\n").utf8))
            }
            let first = try HaulProcess(["--plain", "-q", "-j", "4", "-o", "out", "-i", "a.txt"], in: dir.path)
            let second = try HaulProcess(["--plain", "-q", "-j", "4", "-o", "out", "-i", "b.txt"], in: dir.path)
            let (a, b) = (await first.wait(), await second.wait())
            #expect(a.status == 0, "\(a.stderr)")
            #expect(b.status == 0, "\(b.stderr)")
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: dir.file("out"))) ?? []).sorted()
            #expect(names.count == 300)
            #expect(!names.contains { $0.hasSuffix(".part") || $0.hasSuffix(".json") || $0.hasSuffix(".tmp") })
            let expected = same.bytes(offset: 0, count: same.size)
            for name in names { #expect(dir.contents("out/\(name)") == expected, "\(name)") }
        }
    }

    @Test func aWrongRangeOnResumeExitsSevenAndNamesNothingDone() async throws {
        let dir = TempDirectory()
        try await withSampleServer { server in
            var faults = SampleServerFaults()
            faults.dropAfterBytes = 5 << 20
            faults.dropLimit = 1
            server.setFaults(faults)
            let url = server.downloadURL("medium.bin")
            let first = try await HaulProcess.run(["--plain", "-q", "--retries", "0", url], in: dir.path)
            #expect(first.status == 4, "\(first.stderr)")
            faults = SampleServerFaults()
            faults.wrongRange = .fromStart
            server.setFaults(faults)
            let exit = try await HaulProcess.run(["--plain", "-q", url], in: dir.path)
            #expect(exit.status == 7)
            #expect(exit.stderr.hasPrefix("haul: medium.bin: the server answered bytes 0-"))
            #expect(exit.stderr.split(separator: "\n").count == 1)
            #expect(dir.listing() == ["medium.bin.part", "medium.bin.part.journal", "medium.bin.part.json"])
        }
    }

    /// Every stream and every file of a run with `user:password@` URLs: plain, JSON, a failure, an
    /// interrupted download's state file.
    @Test func aURLPasswordAppearsInNoOutputAndNoFile() async throws {
        let dir = TempDirectory()
        try await withSampleServer(rate: 2 << 20) { server in
            func secret(_ name: String) -> String {
                server.downloadURL(name).replacingOccurrences(of: "http://", with: "http://ann:s3cret-pw@")
            }
            var outputs: [String] = []
            let plain = try await HaulProcess.run(["--plain", "-o", "out", secret("small.bin"), secret("nope.bin")],
                                                  in: dir.path)
            #expect(plain.status == 8)
            #expect(plain.stderr.contains("(http://ann:***@127.0.0.1:"))
            outputs += [plain.stdout, plain.stderr]
            let json = try await HaulProcess.run(["--json", "-o", "out", secret("small.bin"), secret("nope.bin")],
                                                 in: dir.path)
            #expect(json.stdout.contains(#""url":"http:\/\/ann:***@"#) || json.stdout.contains(#""url":"http://ann:***@"#))
            outputs += [json.stdout, json.stderr]
            // Interrupted after its first checkpoint: the state file stays on disk.
            let process = try HaulProcess(["--json", "-o", "out", secret("medium.bin")], in: dir.path)
            _ = try await within(30, "a state file") {
                await process.firstLine { _ in FileManager.default.fileExists(atPath: dir.file("out/medium.bin.part.json")) }
            }
            process.send(SIGINT)
            let interrupted = await process.wait()
            #expect(interrupted.status == 130)
            outputs += [interrupted.stdout, interrupted.stderr]
            #expect(FileManager.default.fileExists(atPath: dir.file("out/medium.bin.part.json")))
            for output in outputs { #expect(!output.contains("s3cret"), "\(output)") }
            let files = FileManager.default.enumerator(atPath: dir.path)?.compactMap { $0 as? String } ?? []
            #expect(files.contains("out/medium.bin.part.json"))
            for file in files {
                let bytes = dir.contents(file) ?? []
                #expect(!String(decoding: bytes, as: UTF8.self).contains("s3cret"), "\(file)")
            }
        }
    }
}
