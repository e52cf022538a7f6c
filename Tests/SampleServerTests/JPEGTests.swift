import CJPEG
import Foundation
import SampleServer
import TestSupport
import Testing

@Suite("Generated JPEGs")
struct JPEGTests {
    private static let names = ["photo-small.jpg", "photo-medium.jpg", "photo-large.jpg"]


    private func download(_ name: String, from server: SampleServer) async throws -> [UInt8] {
        let response = try await RawHTTPClient.fetch(from: server, downloadTarget(name))
        #expect(response.status == 200)
        #expect(response["content-type"] == "image/jpeg")
        return response.body
    }

    @Test func jpegsAreProgressiveAndLargeEnough() async throws {
        try await withServer(SampleServerConfiguration(port: 0, files: [], jpegs: true)) { server in
            var sizes: [String: Int] = [:]
            for name in Self.names {
                let bytes = try await download(name, from: server)
                sizes[name] = bytes.count
                #expect(bytes.starts(with: [0xFF, 0xD8]) && Array(bytes.suffix(2)) == [0xFF, 0xD9], "\(name)")
                let hasSOF2 = zip(bytes, bytes.dropFirst()).contains { $0 == 0xFF && $1 == 0xC2 }
                #expect(hasSOF2, "\(name) is progressive")
                let image = try decoded(bytes[...])
                #expect(image.rowsDecoded == image.height, "\(name) decodes completely")
            }
            #expect(try #require(sizes["photo-large.jpg"]) >= 5_000_000)
            #expect(try #require(sizes["photo-medium.jpg"]) >= 1_000_000)
            #expect(try #require(sizes["photo-small.jpg"]) >= 100_000)
        }
    }

    /// Decodes with libjpeg, failing the test when nothing could be read.
    private func decoded(_ bytes: ArraySlice<UInt8>) throws -> DecodedJPEG {
        let image = DecodedJPEG(bytes)
        try #require(image.status >= 0, "libjpeg could not read the image")
        return image
    }

    @Test(arguments: names)
    func aFifthOfTheFileDecodesToTheFullSizeBlurred(name: String) async throws {
        try await withServer(SampleServerConfiguration(port: 0, files: [], jpegs: true)) { server in
            let bytes = try await download(name, from: server)
            let complete = try decoded(bytes[...])
            let prefix = try decoded(bytes[..<(bytes.count / 5)])
            #expect(prefix.width == complete.width && prefix.height == complete.height)
            #expect(prefix.rowsDecoded == complete.height)
            let lastRow = prefix.rgb.suffix(prefix.width * 3)
            #expect(lastRow.contains { $0 != 128 }, "the bottom row has picture content, not the gray fill")
            #expect(prefix.rgb != complete.rgb, "a prefix lacks the fine detail")
        }
    }

    @Test func aTruncatedHeaderIsRejected() throws {
        var width: Int32 = 0
        var height: Int32 = 0
        var rows: Int32 = 0
        var rgb: UnsafeMutablePointer<UInt8>?
        let garbage: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00]
        let status = garbage.withUnsafeBufferPointer {
            haul_jpeg_decode_rgb($0.baseAddress, UInt($0.count), &width, &height, &rgb, &rows)
        }
        #expect(status == -1)
        #expect(rgb == nil)
    }
}
