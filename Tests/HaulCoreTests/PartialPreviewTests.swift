import CJPEG
import Foundation
import SampleServer
import TestSupport
import Testing
@testable import HaulCore

/// The partial-capable flag, and the `STEM.partial.EXT` preview a cancelled JPEG download leaves.
@Suite struct PartialPreviewTests {
    // MARK: the task-local flag

    @Test func theFlagIsFalseUnlessBound() {
        #expect(DownloadContext.supportsPartialDownloads == false)
        DownloadContext.$supportsPartialDownloads.withValue(true) {
            #expect(DownloadContext.supportsPartialDownloads == true)
        }
        #expect(DownloadContext.supportsPartialDownloads == false)
    }

    @Test func nestedBindingsShadowAndRestore() async {
        await DownloadContext.$supportsPartialDownloads.withValue(true) {
            #expect(DownloadContext.supportsPartialDownloads == true)
            await DownloadContext.$supportsPartialDownloads.withValue(false) {
                #expect(DownloadContext.supportsPartialDownloads == false)
                DownloadContext.$supportsPartialDownloads.withValue(true) {
                    #expect(DownloadContext.supportsPartialDownloads == true)
                }
                await Task.yield()
                #expect(DownloadContext.supportsPartialDownloads == false)
            }
            #expect(DownloadContext.supportsPartialDownloads == true)
        }
    }

    @Test(arguments: [true, false])
    func childTasksInheritTheBinding(bound: Bool) async {
        let seen = await DownloadContext.$supportsPartialDownloads.withValue(bound) {
            await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<4 {  // like the segments of one download
                    group.addTask { DownloadContext.supportsPartialDownloads }
                }
                // A grandchild, through a nested group, sees it too.
                group.addTask {
                    await withTaskGroup(of: Bool.self) { inner in
                        inner.addTask { DownloadContext.supportsPartialDownloads }
                        return await inner.next() ?? !bound
                    }
                }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
        }
        #expect(seen == Array(repeating: bound, count: 5))
    }

    @Test func asyncLetAndUnstructuredTasksInheritButDetachedOnesDoNot() async {
        await DownloadContext.$supportsPartialDownloads.withValue(true) {
            async let child = DownloadContext.supportsPartialDownloads
            #expect(await child == true)
            // `Task {}` copies the current task-local values, as the manager's per-download task relies on.
            let unstructured = Task { DownloadContext.supportsPartialDownloads }
            #expect(await unstructured.value == true)
            // Detached on purpose: this test shows that a detached task starts without the binding.
            let detached = Task.detached { DownloadContext.supportsPartialDownloads }
            #expect(await detached.value == false)
        }
    }

    @Test func jpegCapabilityByNameOrContentType() {
        #expect(PartialPreview.isPicture(name: "photo.jpg", contentType: nil))
        #expect(PartialPreview.isPicture(name: "PHOTO.JPEG", contentType: nil))
        #expect(PartialPreview.isPicture(name: "photo", contentType: "image/jpeg"))
        #expect(PartialPreview.isPicture(name: nil, contentType: "Image/JPEG; charset=binary"))
        #expect(PartialPreview.isPicture(name: "photo.png", contentType: nil))
        #expect(PartialPreview.isPicture(name: "photo", contentType: "image/png"))
        #expect(!PartialPreview.isPicture(name: "photo.gif", contentType: "image/gif"))
        #expect(!PartialPreview.isPicture(name: "jpg", contentType: nil))
        #expect(!PartialPreview.isPicture(name: "photo.jpg.bin", contentType: "application/octet-stream"))
        #expect(!PartialPreview.isPicture(contentType: "image/jpeg2000"))
    }

    @Test func previewPathSitsBesideTheTarget() {
        #expect(PartialPreview.previewPath(for: "/tmp/x/photo.jpg") == "/tmp/x/photo.partial.jpg")
        #expect(PartialPreview.previewPath(for: "out/photo.1.jpeg") == "out/photo.1.partial.jpeg")
        #expect(PartialPreview.previewPath(for: "photo.jpg") == "photo.partial.jpg")
        #expect(PartialPreview.previewPath(for: "/d/raw") == "/d/raw.partial")
    }

    // MARK: writing the preview

    private func makePart(_ dir: TempDirectory, _ bytes: [UInt8], name: String = "photo.jpg") throws -> String {
        let path = dir.file(name + ".part")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func writesThePrefixFollowedByEndOfImage() throws {
        let dir = TempDirectory()
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let part = try makePart(dir, bytes)
        let saved = try DownloadContext.$supportsPartialDownloads.withValue(true) {
            try PartialPreview.saveIfWanted(partPath: part, targetPath: dir.file("photo.jpg"), contiguousBytes: 600,
                                            contentType: nil)
        }
        #expect(saved == dir.file("photo.partial.jpg"))
        #expect(dir.contents("photo.partial.jpg") == Array(bytes[..<600]) + [0xFF, 0xD9])
        #expect(dir.contents("photo.jpg.part") == bytes, "the part file is untouched")
        #expect(dir.listing() == ["photo.jpg.part", "photo.partial.jpg"], "no temporary file left")
    }

    @Test func endOfImageIsNotAppendedTwice() throws {
        let dir = TempDirectory()
        let bytes: [UInt8] = [0xFF, 0xD8, 1, 2, 3, 0xFF, 0xD9, 9, 9]
        let part = try makePart(dir, bytes)
        let saved = try DownloadContext.$supportsPartialDownloads.withValue(true) {
            try PartialPreview.saveIfWanted(partPath: part, targetPath: dir.file("photo.jpg"), contiguousBytes: 7,
                                            contentType: nil)
        }
        #expect(saved != nil)
        #expect(dir.contents("photo.partial.jpg") == Array(bytes[..<7]))
    }

    @Test func endOfImageSplitAcrossChunksIsSeen() throws {
        let dir = TempDirectory()
        var bytes = [UInt8](repeating: 0x11, count: PartialPreview.chunkSize + 1)
        bytes[PartialPreview.chunkSize - 1] = 0xFF
        bytes[PartialPreview.chunkSize] = 0xD9
        let part = try makePart(dir, bytes)
        try DownloadContext.$supportsPartialDownloads.withValue(true) {
            _ = try PartialPreview.saveIfWanted(partPath: part, targetPath: dir.file("photo.jpg"),
                                                contiguousBytes: Int64(bytes.count), contentType: nil)
        }
        #expect(dir.contents("photo.partial.jpg") == bytes)
    }

    @Test func aLargePrefixIsCopiedExactly() throws {
        let dir = TempDirectory()
        let count = 3 * PartialPreview.chunkSize + 12_345
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<count + 999).map { _ in UInt8.random(in: 0...0xFE, using: &generator) }
        let part = try makePart(dir, bytes)
        try DownloadContext.$supportsPartialDownloads.withValue(true) {
            _ = try PartialPreview.saveIfWanted(partPath: part, targetPath: dir.file("photo.jpg"),
                                                contiguousBytes: Int64(count), contentType: nil)
        }
        #expect(dir.contents("photo.partial.jpg") == Array(bytes[..<count]) + [0xFF, 0xD9])
    }

    @Test func moreThanThePartHoldsIsClampedToIt() throws {
        let dir = TempDirectory()
        let part = try makePart(dir, [0xFF, 0xD8, 0xAA])
        try DownloadContext.$supportsPartialDownloads.withValue(true) {
            _ = try PartialPreview.saveIfWanted(partPath: part, targetPath: dir.file("photo.jpg"),
                                                contiguousBytes: 1_000_000, contentType: nil)
        }
        #expect(dir.contents("photo.partial.jpg") == [0xFF, 0xD8, 0xAA, 0xFF, 0xD9])
    }

    @Test func aNewerPreviewReplacesAnOlderOne() throws {
        let dir = TempDirectory()
        let bytes = (0..<100).map { UInt8($0) }
        let part = try makePart(dir, bytes)
        try DownloadContext.$supportsPartialDownloads.withValue(true) {
            for length in [10, 50] {
                _ = try PartialPreview.saveIfWanted(partPath: part, targetPath: dir.file("photo.jpg"),
                                                    contiguousBytes: Int64(length), contentType: nil)
            }
        }
        #expect(dir.contents("photo.partial.jpg") == Array(bytes[..<50]) + [0xFF, 0xD9])
    }

    @Test func withoutTheFlagOrAJPEGTypeNothingIsWritten() throws {
        let dir = TempDirectory()
        let part = try makePart(dir, [1, 2, 3, 4])
        let target = dir.file("photo.jpg")
        #expect(try PartialPreview.saveIfWanted(partPath: part, targetPath: target, contiguousBytes: 4,
                                                contentType: nil) == nil)
        let explicitlyOff = try DownloadContext.$supportsPartialDownloads.withValue(false) {
            try PartialPreview.saveIfWanted(partPath: part, targetPath: target, contiguousBytes: 4,
                                            contentType: "application/octet-stream")
        }
        #expect(explicitlyOff == nil)
        #expect(dir.listing() == ["photo.jpg.part"])
    }

    @Test func aJPEGContentTypeAloneIsEnough() throws {
        let dir = TempDirectory()
        let part = try makePart(dir, [0xFF, 0xD8], name: "download")
        let saved = try PartialPreview.saveIfWanted(partPath: part, targetPath: dir.file("download"),
                                                    contiguousBytes: 2, contentType: "image/jpeg")
        #expect(saved == dir.file("download.partial"))
        #expect(dir.contents("download.partial") == [0xFF, 0xD8, 0xFF, 0xD9])
    }

    @Test func nothingReceivedMeansNoPreview() throws {
        let dir = TempDirectory()
        let part = try makePart(dir, [])
        let saved = try DownloadContext.$supportsPartialDownloads.withValue(true) {
            try [0, 10].map { length in
                try PartialPreview.saveIfWanted(partPath: part, targetPath: dir.file("photo.jpg"),
                                                contiguousBytes: Int64(length), contentType: nil)
            }
        }
        #expect(saved == [nil, nil], "nothing asked for, then nothing in the part file")
        #expect(dir.listing() == ["photo.jpg.part"])
    }

    @Test func aMissingPartFileIsAFileError() {
        let dir = TempDirectory()
        DownloadContext.$supportsPartialDownloads.withValue(true) {
            let error = #expect(throws: HaulError.self) {
                try PartialPreview.saveIfWanted(partPath: dir.file("gone.jpg.part"), targetPath: dir.file("gone.jpg"),
                                                contiguousBytes: 10, contentType: nil)
            }
            #expect(error?.category == .fileIO)
        }
        #expect(dir.listing().isEmpty)
    }

    // MARK: a real progressive JPEG from the sample server, cut mid-transfer


    /// Streams `url` into `partPath` until `fraction` of it is on disk, then cancels the transfer (as a cancelled
    /// download does). Returns the bytes written, the total, and the response's content type.
    private func receive(_ url: String, fraction: Double, into partPath: String) async throws
        -> (written: Int64, total: Int64, contentType: String?)
    {
        let transfer = CurlDriver.shared.start(HTTPRequest(url: url))
        defer { transfer.cancel() }
        let head = try await transfer.head()
        let total = try #require(head.contentLength)
        let part = try PartFile(path: partPath, truncate: true)
        // Exactly this much, however the batches fall (unthrottled, one batch may hold the whole file).
        let limit = Int64(Double(total) * fraction)
        var written: Int64 = 0
        for try await batch in transfer.bytes {
            let take = Int(min(Int64(batch.count), limit - written))
            try part.write(Array(batch.prefix(take)), at: written)
            written += Int64(take)
            if written >= limit { break }
        }
        transfer.cancel()
        try part.close()
        return (written, total, head["Content-Type"])
    }

    @Test func cancellingAProgressiveJPEGLeavesAPreviewOfTheWholePicture() async throws {
        let configuration = SampleServerConfiguration(port: 0, files: [], jpegs: true)
        try await withSampleServer(configuration) { server in
            for fraction in [0.1, 0.5, 0.9] {
                let dir = TempDirectory()
                let target = dir.file("photo-large.jpg")
                let received = try await receive(server.downloadURL("photo-large.jpg"), fraction: fraction,
                                                 into: target + ".part")
                #expect(received.written < received.total, "cut mid-transfer at \(fraction)")
                #expect(received.contentType == "image/jpeg")
                let saved = try DownloadContext.$supportsPartialDownloads.withValue(true) {
                    try PartialPreview.saveIfWanted(partPath: target + ".part", targetPath: target,
                                                    contiguousBytes: received.written, contentType: nil)
                }
                #expect(saved == dir.file("photo-large.partial.jpg"))
                let preview = try #require(dir.contents("photo-large.partial.jpg"))
                #expect(Int64(preview.count) == received.written + 2)
                #expect(preview.suffix(2) == [0xFF, 0xD9])
                let image = DecodedJPEG(preview)
                #expect(image.status >= 0, "libjpeg reads the preview cut at \(fraction)")
                #expect(image.width == 4_000 && image.height == 3_000, "full size at \(fraction)")
                #expect(image.rowsDecoded == image.height, "every row at \(fraction)")
                #expect(image.lastRow.contains { $0 != 128 }, "the bottom row has picture content at \(fraction)")
            }
        }
    }

    @Test func aCancelledNonJPEGLeavesNoPreview() async throws {
        try await withSampleServer { server in
            let dir = TempDirectory()
            let target = dir.file("medium.bin")
            let received = try await receive(server.downloadURL("medium.bin"), fraction: 0.3, into: target + ".part")
            #expect(received.written > 0 && received.written < received.total)
            let capable = PartialPreview.isPicture(name: "medium.bin", contentType: received.contentType)
            #expect(!capable)
            let saved = try DownloadContext.$supportsPartialDownloads.withValue(capable) {
                try PartialPreview.saveIfWanted(partPath: target + ".part", targetPath: target,
                                                contiguousBytes: received.written, contentType: received.contentType)
            }
            #expect(saved == nil)
            #expect(dir.listing() == ["medium.bin.part"])
        }
    }

    @Test func resumingAfterAPreviewFinishesByteIdenticalAndKeepsThePreview() async throws {
        let configuration = SampleServerConfiguration(port: 0, files: [], jpegs: true)
        try await withSampleServer(configuration) { server in
            let dir = TempDirectory()
            let target = dir.file("photo-medium.jpg")
            let url = server.downloadURL("photo-medium.jpg")
            let received = try await receive(url, fraction: 0.4, into: target + ".part")
            try DownloadContext.$supportsPartialDownloads.withValue(true) {
                _ = try PartialPreview.saveIfWanted(partPath: target + ".part", targetPath: target,
                                                    contiguousBytes: received.written, contentType: nil)
            }
            let preview = try #require(dir.contents("photo-medium.partial.jpg"))

            // Resume from the end of the part file with a Range request, as the downloader does.
            var request = HTTPRequest(url: url)
            request.range = (received.written, nil)
            let transfer = CurlDriver.shared.start(request)
            let head = try await transfer.head()
            #expect(head.status == 206)
            let part = try PartFile(path: target + ".part", truncate: false)
            var offset = received.written
            for try await batch in transfer.bytes {
                try part.write(batch, at: offset)
                offset += Int64(batch.count)
            }
            try part.close()
            #expect(offset == received.total)

            let whole = CurlDriver.shared.start(HTTPRequest(url: url))
            var expected: [UInt8] = []
            for try await batch in whole.bytes { expected += batch }
            #expect(dir.contents("photo-medium.jpg.part") == expected, "resumed file is byte-identical")
            #expect(dir.contents("photo-medium.partial.jpg") == preview, "the preview stays as it was")
            let complete = DecodedJPEG(expected)
            #expect(complete.status == 0 && complete.rowsDecoded == complete.height, "the full file decodes cleanly")
        }
    }
}
