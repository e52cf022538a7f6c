import CJPEG
import Foundation
import SampleServer
import TestSupport
import Testing
@testable import HaulCore

/// Cancelling real downloads through `DownloadManager`: a JPEG leaves `STEM.partial.EXT` (the manager binds the
/// task-local flag, the downloader saves the preview), other files do not, and the download stays resumable.
@Suite struct CancelledJPEGTests {
    /// Per connection; photo-large.jpg (about 6 MB) takes about 3 s, so a cancel lands where it is aimed.
    static let rate = 2 << 20

    static let jpegServer = SampleServerConfiguration(port: 0, rate: rate, jpegs: true)

    /// What happened to one download.
    struct Outcome {
        var state: DownloadState?
        var facts: [DownloadFact] = []
        var total: Int64?
        var cancelledAt: Int64?
        /// Bytes fetched by a download that completed.
        var received: Int64?

        var preview: String? {
            facts.lazy.compactMap { if case .previewSaved(let path) = $0 { path } else { nil } }.first
        }
    }

    /// Adds `job` to a fresh manager, cancels it (or all, with `all`) once `fraction` of it is on disk (never with
    /// `fraction` nil), and collects its events until the manager is idle: the manager shows "cancelled" at once,
    /// and the preview notice follows when the download's task has stopped.
    func run(_ job: DownloadJob, cancelAt fraction: Double?, all: Bool = false) async throws -> Outcome {
        let manager = DownloadManager(concurrency: 1)
        let id = await manager.add(job)
        return try await within(.seconds(60), "the download to stop") {
            var outcome = Outcome()
            for await event in manager.events {
                switch event {
                case .fact(id, let fact):
                    outcome.facts.append(fact)
                case .progress(id, let progress):
                    outcome.total = progress.total
                    if let fraction, outcome.cancelledAt == nil, let total = progress.total,
                       Double(progress.completed) >= Double(total) * fraction
                    {
                        outcome.cancelledAt = progress.completed
                        if all { await manager.cancelAll() } else { await manager.cancel(id) }
                    }
                case .finished(id, let result, _):
                    outcome.received = result.bytes
                case .state(id, let state) where state.isFinished:
                    outcome.state = state
                    await manager.waitUntilIdle()
                    await manager.finishEvents()  // the rest of the buffered events, then the end
                default:
                    break
                }
            }
            return outcome
        }
    }


    /// The file as the server has it.
    private func serverBytes(_ url: String) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        for try await batch in CurlDriver.shared.start(HTTPRequest(url: url)).bytes { bytes += batch }
        return bytes
    }

    @Test(arguments: [(0.1, false), (0.5, true), (0.9, false)])
    func cancellingTheLargeJPEGLeavesAPreviewOfTheWholePicture(fraction: Double, cancelAll: Bool) async throws {
        try await withSampleServer(Self.jpegServer) { server in
            let dir = TempDirectory()
            let job = DownloadJob(url: server.downloadURL("photo-large.jpg"), outputDirectory: dir.path)
            let outcome = try await run(job, cancelAt: fraction, all: cancelAll)
            #expect(outcome.state == .cancelled)
            let path = try #require(outcome.preview, "facts: \(outcome.facts)")
            #expect(path == dir.file("photo-large.partial.jpg"))
            let preview = try #require(dir.contents("photo-large.partial.jpg"))
            let total = try #require(outcome.total)
            let cancelledAt = try #require(outcome.cancelledAt)
            #expect(Int64(preview.count) >= cancelledAt, "at least what was on disk at the cancel")
            #expect(Int64(preview.count) < total + 2, "a prefix, not the whole file")
            let image = DecodedJPEG(preview)
            #expect(image.status >= 0)
            #expect(image.width == 4_000 && image.height == 3_000 && image.rowsDecoded == 3_000)
            #expect(dir.listing() == ["photo-large.jpg.part", "photo-large.jpg.part.journal", "photo-large.jpg.part.json",
                                      "photo-large.partial.jpg"])
        }
    }

    @Test func aSegmentedJPEGPreviewIsTheContiguousPrefixOnly() async throws {
        try await withSampleServer(Self.jpegServer) { server in
            let dir = TempDirectory()
            let url = server.downloadURL("photo-large.jpg")
            var job = DownloadJob(url: url, outputDirectory: dir.path)
            job.segments = 4
            let outcome = try await run(job, cancelAt: 0.5)
            #expect(outcome.state == .cancelled)
            #expect(outcome.preview == dir.file("photo-large.partial.jpg"))
            let preview = try #require(dir.contents("photo-large.partial.jpg"))
            let original = try await serverBytes(url)
            // Holes would show up as zeros where the original has data.
            #expect(Array(preview.dropLast(2)) == Array(original.prefix(preview.count - 2)))
            #expect(preview.suffix(2) == [0xFF, 0xD9])
            #expect(DecodedJPEG(preview).width == 4_000)
        }
    }

    @Test func aJPEGContentTypeIsEnoughWithoutAJPEGName() async throws {
        try await withSampleServer(Self.jpegServer) { server in
            let dir = TempDirectory()
            let job = DownloadJob(url: server.downloadURL("photo-large.jpg"), outputDirectory: dir.path,
                                  outputName: "picture")
            let outcome = try await run(job, cancelAt: 0.3)
            #expect(outcome.state == .cancelled)
            #expect(outcome.preview == dir.file("picture.partial"))
            let preview = try #require(dir.contents("picture.partial"))
            #expect(DecodedJPEG(preview).height == 3_000)
        }
    }

    @Test func noPartialPreviewMeansNoPreviewEvenForAJPEG() async throws {
        try await withSampleServer(Self.jpegServer) { server in
            let dir = TempDirectory()
            var job = DownloadJob(url: server.downloadURL("photo-medium.jpg"), outputDirectory: dir.path)
            job.partialPreview = false
            let outcome = try await run(job, cancelAt: 0.3)
            #expect(outcome.state == .cancelled)
            #expect(outcome.preview == nil)
            #expect(!dir.listing().contains { $0.contains("partial") }, "\(dir.listing())")
            #expect(dir.listing().contains("photo-medium.jpg.part"))
        }
    }

    @Test func aCancelledNonJPEGLeavesNoPreview() async throws {
        try await withSampleServer(rate: Self.rate) { server in
            let dir = TempDirectory()
            let job = DownloadJob(url: server.downloadURL("medium.bin"), outputDirectory: dir.path)
            let outcome = try await run(job, cancelAt: 0.2)
            #expect(outcome.state == .cancelled)
            #expect(outcome.cancelledAt != nil)
            #expect(outcome.preview == nil)
            #expect(!dir.listing().contains { $0.contains("partial") }, "\(dir.listing())")
            #expect(dir.listing().contains("medium.bin.part"))
        }
    }

    @Test func resumingAfterAPreviewFinishesByteIdenticalAndLeavesThePreview() async throws {
        try await withSampleServer(Self.jpegServer) { server in
            let dir = TempDirectory()
            let url = server.downloadURL("photo-medium.jpg")
            let job = DownloadJob(url: url, outputDirectory: dir.path)
            let cancelled = try await run(job, cancelAt: 0.4)
            #expect(cancelled.state == .cancelled)
            let preview = try #require(dir.contents("photo-medium.partial.jpg"))

            // The same job again (as a second run of haul would) resumes from NAME.part and its state.
            let resumed = try await run(job, cancelAt: nil)
            #expect(resumed.state == .done)
            let total = try #require(resumed.total)
            let received = try #require(resumed.received)
            #expect(received < total, "only the rest was fetched: \(received) of \(total)")
            let original = try await serverBytes(url)
            #expect(dir.contents("photo-medium.jpg") == original, "byte-identical")
            #expect(dir.contents("photo-medium.partial.jpg") == preview, "the preview stays as it was")
            #expect(dir.listing() == ["photo-medium.jpg", "photo-medium.partial.jpg"])
        }
    }

    /// A cancel that lands while a download waits to retry ends it as any cancel does: a JPEG leaves the
    /// preview of what came before the failure, and a part that never got a byte goes (the retry's wait
    /// returned "cancelled" by itself before, leaving the empty part behind and no preview). On a clock that
    /// never moves, the wait lasts until the cancel.
    @Test(arguments: [false, true])
    func aCancelWhileWaitingToRetryEndsLikeAnyCancel(jpeg: Bool) async throws {
        try await withSampleServer(Self.jpegServer) { server in
            let dir = TempDirectory()
            var faults = SampleServerFaults()
            if jpeg {
                faults.dropAfterBytes = 300_000  // every answer: the first attempt fails with a part to keep
            } else {
                faults.unavailableCount = 1_000  // 503 to every request: nothing ever arrives
            }
            server.setFaults(faults)
            let name = jpeg ? "photo-large.jpg" : "small.bin"
            let manager = DownloadManager(downloader: Downloader(clock: ManualClock()), concurrency: 1)
            let id = await manager.add(DownloadJob(url: server.downloadURL(name), outputDirectory: dir.path))
            let facts = try await within(.seconds(30), "the retry, then the end") {
                var facts: [DownloadFact] = []
                for await event in manager.events {
                    switch event {
                    case .fact(id, let fact):
                        facts.append(fact)
                        if fact.retry != nil { await manager.cancel(id) }
                    case .state(id, let state) where state.isFinished:
                        await manager.waitUntilIdle()
                        await manager.finishEvents()
                    default:
                        break
                    }
                }
                return facts
            }
            #expect(facts.contains { $0.retry != nil }, "\(facts)")
            #expect(await manager.state(of: id) == .cancelled)
            if jpeg {
                #expect(facts.contains(.previewSaved(path: dir.file("photo-large.partial.jpg"))), "\(facts)")
                #expect(dir.listing() == ["photo-large.jpg.part", "photo-large.jpg.part.json",
                                          "photo-large.partial.jpg"])
            } else {
                #expect(dir.listing().isEmpty, "\(dir.listing())")
            }
        }
    }
}
