import Foundation
import Glibc
@testable import HaulCore
import TestSupport
@testable import HaulService

/// Jobs, times and file helpers shared by the store's tests.
enum StoreFixtures {
    /// A whole-millisecond time (the store keeps milliseconds), in November 2023.
    static func time(_ seconds: Double) -> Date {
        Date(timeIntervalSince1970: 1_700_000_000 + seconds)
    }

    /// A job with every field away from its default, and no secrets.
    static func fullJob(directory: String = "/home/user/Downloads") -> DownloadJob {
        var job = DownloadJob(url: "https://example.com/files/archive.tar.gz?v=2", outputDirectory: directory,
                              outputName: "archive-v2.tar.gz")
        job.existingFile = .overwrite
        job.headers = ["Accept: application/octet-stream", "X-Trace: 42"]
        job.transfer.connectTimeout = 7.5
        job.transfer.stallTimeout = 12
        job.transfer.maxRedirects = 3
        job.transfer.insecure = true
        job.transfer.userAgent = "test-agent/1"
        job.transfer.maxReceiveRate = 1_048_576
        job.segments = 8
        job.retries = 2
        job.resume = false
        job.partialPreview = false
        job.checksum = Checksum(algorithm: .sha256, hex: String(repeating: "ab", count: 32))
        return job
    }

    static func job(_ name: String) -> DownloadJob {
        DownloadJob(url: "https://example.com/\(name)", outputDirectory: "/tmp/out")
    }

    /// Every regular file in `directory` (the database, its -wal and -shm), concatenated.
    static func bytesOfEveryFile(in directory: TempDirectory) -> [UInt8] {
        directory.listing().flatMap { directory.contents($0) ?? [] }
    }

    static func mode(of path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o777
    }
}

extension [UInt8] {
    func containsText(_ text: String) -> Bool {
        let needle = Array(text.utf8)
        guard !needle.isEmpty, needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { self[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
