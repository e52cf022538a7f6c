import CJPEG

/// A JPEG decoded with libjpeg through the CJPEG shim, for tests: what decoded, never a crash.
public struct DecodedJPEG: Sendable {
    /// 0 complete, 1 truncated or damaged but usable, -1 nothing could be read.
    public let status: Int32
    public let width: Int
    public let height: Int
    public let rowsDecoded: Int
    /// RGB, three bytes a pixel, row after row; rows never reached are gray.
    public let rgb: [UInt8]

    public init<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        var width: Int32 = 0
        var height: Int32 = 0
        var rows: Int32 = 0
        var pixels: UnsafeMutablePointer<UInt8>?
        let status = Array(bytes).withUnsafeBufferPointer {
            haul_jpeg_decode_rgb($0.baseAddress, UInt($0.count), &width, &height, &pixels, &rows)
        }
        defer { haul_jpeg_free(pixels) }
        self.status = status
        self.width = Int(width)
        self.height = Int(height)
        rowsDecoded = Int(rows)
        rgb = pixels.map { Array(UnsafeBufferPointer(start: $0, count: Int(width) * Int(height) * 3)) } ?? []
    }

    /// The bottom row's RGB bytes.
    public var lastRow: ArraySlice<UInt8> { rgb.suffix(width * 3) }
}
