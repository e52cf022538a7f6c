import Foundation
import SampleServer
import TestSupport
import Testing
@testable import HaulCore

/// A part damaged past its last durable checkpoint (what a power loss leaves) is repaired by fetching exactly the
/// damaged bytes again, and `haul verify` says what is good and what is not. Exact byte counts, whatever the
/// machine's load: these run with the rest of the suite (the cost bounds of kills, CrashResumeTests, run alone).
@Suite struct CrashRepairTests {
    enum Damage: String, CaseIterable {
        case zeroed, truncated, flipped
    }

    /// A kill, then the part is damaged past its last durable checkpoint as a power loss would leave it; the
    /// next run checks what the journal recorded, fetches again exactly what fails, and ends byte-identical.
    @Test(arguments: Damage.allCases)
    func damagePastTheLastCheckpointIsFetchedAgain(damage: Damage) async throws {
        let dir = TempDirectory()
        try await withSampleServer(CrashResumeTests.configuration) { (server) async throws in
            let arguments = ["--plain", "-s", "1", server.downloadURL(CrashResumeTests.file.name)]
            let (durable, records) = try await Self.killedWithRecordsPastTheCheckpoint(arguments, server, dir)
            let part = dir.file(CrashResumeTests.file.name + ".part")
            // The last record: those before it show what a check keeps.
            let victim = try #require(records.last, "records past the checkpoint")
            let fd = open(part, O_WRONLY)
            #expect(fd >= 0)
            switch damage {
            case .zeroed:
                let zeros = [UInt8](repeating: 0, count: Int(victim.length))
                #expect(pwrite(fd, zeros, zeros.count, off_t(victim.offset)) == zeros.count)
            case .flipped:
                var byte: UInt8 = 0
                #expect(pread(open(part, O_RDONLY), &byte, 1, off_t(victim.offset + victim.length / 2)) == 1)
                byte ^= 0x5A
                #expect(pwrite(fd, &byte, 1, off_t(victim.offset + victim.length / 2)) == 1)
            case .truncated:
                #expect(ftruncate(fd, off_t(victim.offset + victim.length / 2)) == 0)
            }
            close(fd)
            // What the next run keeps: the durable ranges and the records before the victim; one connection
            // goes on from the end of that prefix.
            var kept = ResumeState(url: "", etag: nil, lastModified: nil, total: nil, completed: durable)
            for record in records where record != victim { kept.add(record.range) }
            let keptBytes = kept.contiguousPrefix
            #expect(keptBytes >= victim.offset, "the records before the victim are kept")
            let before = server.stats.bodyBytesSent
            let last = try await HaulProcess.run(arguments, in: dir.path)
            #expect(last.status == 0, "\(last.stderr)")
            #expect(try FileDigest.hex(of: dir.file(CrashResumeTests.file.name)) == CrashResumeTests.expected())
            let sent = Int64(server.stats.bodyBytesSent - before)
            // Exactly what was not kept: the damaged bytes came again, the good ones before them did not.
            #expect(sent == Int64(CrashResumeTests.file.size) - keptBytes, "sent \(sent), kept \(keptBytes) of \(CrashResumeTests.file.size)")
            #expect(last.stdout.contains("of \(CrashResumeTests.file.name).part failed their check after a crash"), "\(last.stdout)")
        }
    }

    /// Runs `arguments` until the journal holds records past the durable checkpoint, kills it, and returns
    /// the durable ranges and those records (sorted), as the process left them.
    static func killedWithRecordsPastTheCheckpoint(_ arguments: [String], _ server: SampleServer, _ dir: TempDirectory)
        async throws -> (durable: [ByteRange], records: [WriteJournal.Record])
    {
        let state = dir.file(CrashResumeTests.file.name + ".part.json")
        @Sendable func recorded() -> (durable: [ByteRange], records: [WriteJournal.Record])? {
            guard case .found(let found) = ResumeState.load(from: state), let directory = try? OutputDirectory(dir.path)
            else { return nil }
            let records = WriteJournal.load(CrashResumeTests.file.name + ".part.journal", in: directory)
                .filter { record in !found.completed.contains { $0.start <= record.offset && record.range.end <= $0.end } }
                .sorted { $0.offset < $1.offset }
            return (found.completed, records)
        }
        var process = try HaulProcess(arguments, in: dir.path)
        // A checkpoint can land between the look and the kill and make every record durable: then the next
        // run (a resume) is killed the same way.
        for _ in 0..<5 {
            try await waitForFiles(in: dir.path, "records past the last checkpoint", within: .seconds(30)) {
                (recorded()?.records.count ?? 0) >= 4
            }
            process.send(SIGKILL)
            _ = await process.wait()
            // The killed connection's last writes are counted once the server has seen it go.
            await server.waitUntilNoBodies()
            if let left = recorded(), !left.records.isEmpty { return left }
            process = try HaulProcess(arguments, in: dir.path)
        }
        throw WaitTimedOut(what: "a kill with records past the last checkpoint")
    }

    /// `haul verify` reads the part back against its journal: all good after a plain kill (exit 0); after
    /// damage, exit 9 naming what is damaged, which is then marked missing (a second verify: 0), and the
    /// next run fetches it again and ends byte-identical.
    @Test func verifySaysWhatIsGoodAndDamagedAndTheNextRunRepairsIt() async throws {
        let dir = TempDirectory()
        try await withSampleServer(CrashResumeTests.configuration) { (server) async throws in
            let arguments = ["--plain", "-q", "-s", "1", server.downloadURL(CrashResumeTests.file.name)]
            let (_, records) = try await Self.killedWithRecordsPastTheCheckpoint(arguments, server, dir)
            let part = dir.file(CrashResumeTests.file.name + ".part")
            let clean = try await HaulProcess.run(["verify", part], in: dir.path)
            #expect(clean.status == 0, "\(clean.stdout) \(clean.stderr)")
            #expect(clean.stdout.contains(" good in ") && !clean.stdout.contains("damaged"), "\(clean.stdout)")

            let victim = try #require(records.last)
            let fd = open(part, O_WRONLY)
            let zeros = [UInt8](repeating: 0, count: Int(victim.length))
            #expect(pwrite(fd, zeros, zeros.count, off_t(victim.offset)) == zeros.count)
            close(fd)
            // By NAME: its .part is what is checked.
            let damaged = try await HaulProcess.run(["verify", CrashResumeTests.file.name], in: dir.path)
            #expect(damaged.status == 9, "\(damaged.stdout) \(damaged.stderr)")
            #expect(damaged.stdout.hasPrefix(CrashResumeTests.file.name + ".part: "), "\(damaged.stdout)")
            #expect(damaged.stdout.contains("damaged in 1 block (marked missing"), "\(damaged.stdout)")
            let again = try await HaulProcess.run(["verify", part], in: dir.path)
            #expect(again.status == 0, "\(again.stdout) \(again.stderr)")

            let last = try await HaulProcess.run(arguments, in: dir.path)
            #expect(last.status == 0, "\(last.stderr)")
            #expect(try FileDigest.hex(of: dir.file(CrashResumeTests.file.name)) == CrashResumeTests.expected())
            #expect(dir.listing() == [CrashResumeTests.file.name])
        }
    }

    @Test func verifyWithoutARecordOrFileSaysSoInOneLine() async throws {
        let dir = TempDirectory()
        let missing = try await HaulProcess.run(["verify", "nothing.bin"], in: dir.path)
        #expect(missing.status == 3 && missing.stderr.split(separator: "\n").count == 1, "\(missing.stderr)")
        #expect(missing.stderr.contains("nothing.bin: no such file"))
        #expect(FileManager.default.createFile(atPath: dir.file("plain.bin"), contents: Data([1, 2, 3])))
        let bare = try await HaulProcess.run(["verify", "plain.bin"], in: dir.path)
        #expect(bare.status == 1 && bare.stderr.contains("has no record to check it against"), "\(bare.stderr)")
        #expect(dir.listing() == ["plain.bin"])
    }
}
