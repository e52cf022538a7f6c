import TestSupport
import Testing
@testable import HaulCore

/// What an SFTP or SCP transfer does otherwise than an HTTP one: curl's larger buffer (libssh2 keeps four
/// times it asked for ahead), several connections when none were asked for, and no race that ends them.
@Suite struct SSHTransferTests {
    func job(_ url: String, segments: Int = DownloadJob.defaultSegments, perServer: Int? = nil,
             mirrors: [String] = []) -> DownloadJob {
        var job = DownloadJob(url: url, outputDirectory: "/tmp")
        job.sources += mirrors.map { DownloadSource(url: $0) }
        job.segments = segments
        if let perServer { job.connectionsPerServer = perServer }
        return job
    }

    @Test func anSFTPDownloadLeftAtOneConnectionTakesThePerServerCap() {
        #expect(Downloader.connections(for: job("sftp://h/f")) == 4)
        #expect(Downloader.connections(for: job("sftp://h/f", perServer: 1)) == 1)
        #expect(Downloader.connections(for: job("sftp://h/f", perServer: 6)) == 6)
        // What -s asks for stands.
        #expect(Downloader.connections(for: job("sftp://h/f", segments: 2)) == 2)
        #expect(Downloader.connections(for: job("sftp://h/f", segments: 8, perServer: 2)) == 8)
        // Not over HTTP, FTP or SCP (which cannot ask for a range), nor from several sources.
        #expect(Downloader.connections(for: job("http://h/f")) == 1)
        #expect(Downloader.connections(for: job("ftp://h/f")) == 1)
        #expect(Downloader.connections(for: job("scp://h/f")) == 1)
        #expect(Downloader.connections(for: job("sftp://h/f", mirrors: ["sftp://g/f"])) == 1)
    }

    @Test func theRaceNeverEndsSFTPConnections() {
        #expect(Downloader.raceLimit(64 << 20, for: HTTPRequest(url: "sftp://h/f", options: TransferOptions())) == .max)
        #expect(Downloader.raceLimit(64 << 20, for: HTTPRequest(url: "http://h/f", options: TransferOptions())) == 64 << 20)
        #expect(Downloader.raceLimit(64 << 20, for: HTTPRequest(url: "ftp://h/f", options: TransferOptions())) == 64 << 20)
    }

    @Test func sshTransfersTakeChunksOfTwoMebibytes() {
        #expect(IOBuffer.largestChunk(for: .sftp) == 2 << 20)
        #expect(IOBuffer.largestChunk(for: .scp) == 2 << 20)
        #expect(IOBuffer.largestChunk(for: .ftp) == 256 << 10)
        #expect(IOBuffer.largestChunk(for: nil) == 256 << 10)
    }

    /// A 2 MiB chunk after some bytes still fits the transfer's buffer: curl is not paused for each one.
    @Test func aWholeSSHChunkFitsBesideWhatWaits() {
        var machine = TransferStateMachine(highWatermark: 1 << 20, largestChunk: IOBuffer.largestSSHChunk)
        let small = [UInt8](repeating: 1, count: 100_000)
        let chunk = [UInt8](repeating: 2, count: IOBuffer.largestSSHChunk)
        _ = small.withUnsafeBytes { machine.receive($0, now: .now) }
        let action = chunk.withUnsafeBytes { machine.receive($0, now: .now) }
        if case .pause = action { Issue.record("a 2 MiB chunk paused the transfer") }
        #expect(machine.pauseCount == 0)
        #expect(machine.buffersAllocated == 1)
        #expect(machine.buffered == 100_000 + IOBuffer.largestSSHChunk)
    }
}
