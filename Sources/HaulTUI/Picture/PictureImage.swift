import CJPEG
import CPNG
import HaulCore
import FoundationEssentials
import Glibc

/// Packed 8-bit RGB pixels, row by row, top row first: `pixels.count == width * height * 3`.
package struct RGBImage: Sendable, Equatable {
    let width: Int
    package let height: Int
    let pixels: [UInt8]

    /// Wraps `pixels`; nil unless the sizes are positive and `pixels` holds exactly `width * height * 3` bytes.
    package init?(width: Int, height: Int, pixels: [UInt8]) {
        guard width > 0, height > 0, pixels.count == width * height * 3 else { return nil }
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// The pixel at column `x`, row `y`.
    package subscript(x: Int, y: Int) -> (r: UInt8, g: UInt8, b: UInt8) {
        let i = (y * width + x) * 3
        return (pixels[i], pixels[i + 1], pixels[i + 2])
    }
}

/// Why a picture cannot be shown: one line for the user, such as "photo.jpg is not a JPEG", and its
/// category (`.fileIO` when the file could not be opened or read, `.other` for what it holds).
package struct PictureError: Error, Sendable, Equatable, CustomStringConvertible {
    package let message: String
    package let category: FailureCategory

    package init(_ message: String, category: FailureCategory = .other) {
        self.message = message
        self.category = category
    }

    package var description: String { message }
}

/// A JPEG (libjpeg) or PNG (libpng's progressive reader) decoded: its pixels, and whether the data held the
/// whole picture.
///
/// Truncated or damaged data never crashes: a progressive JPEG cut after its first scan decodes to the whole
/// picture, blurred, and so does an interlaced (Adam7) PNG after its first passes (in blocks); a baseline JPEG
/// or a plain PNG to its top rows (the rest stays mid-gray); data without a readable header is a `PictureError`.
package struct PictureImage: Sendable {
    /// The pixels, at most `maximumPixels` of them: a larger picture is decoded at 1/2, 1/4 or 1/8 of its size.
    package let image: RGBImage
    /// The picture's own size, as its header gives it.
    package let width: Int
    package let height: Int
    /// Rows of `image` libjpeg produced from the data; below them the picture is mid-gray.
    package let rowsDecoded: Int
    /// False when libjpeg had to pad missing data or skip damaged data, or stopped before the last row.
    let complete: Bool

    /// Files larger than this are not read (libjpeg also refuses pictures over 100 Mpixel, and its own
    /// memory is capped at 256 MiB).
    static let maximumFileSize = 256 << 20
    /// More pixels than a terminal shows even in an image protocol: larger pictures are decoded scaled down.
    static let maximumPixels = 4_000_000

    /// The eight bytes every PNG starts with.
    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Why libjpeg and libpng cannot be loaded, if they cannot: asked once (a library's load is tried once),
    /// not at each of a live preview's decodes.
    private static let jpegUnavailable = LoadedLibrary.failure(haul_jpeg_load)
    private static let pngUnavailable = LoadedLibrary.failure(haul_png_load)

    /// Decodes JPEG or PNG bytes (told by their signature), complete or any prefix.
    package init(bytes: [UInt8]) throws(PictureError) {
        if bytes.starts(with: Self.pngSignature) {
            try self.init(png: bytes)
        } else {
            try self.init(jpeg: bytes)
        }
    }

    private init(jpeg bytes: [UInt8]) throws(PictureError) {
        if let failure = Self.jpegUnavailable { throw PictureError(failure) }
        var width: Int32 = 0
        var height: Int32 = 0
        var rows: Int32 = 0
        var imageWidth: Int32 = 0
        var imageHeight: Int32 = 0
        var rgb: UnsafeMutablePointer<UInt8>?
        let status = bytes.withUnsafeBufferPointer {
            haul_jpeg_decode_rgb_scaled($0.baseAddress, UInt($0.count), UInt(Self.maximumPixels), &width, &height,
                                        &rgb, &rows, &imageWidth, &imageHeight)
        }
        defer { haul_jpeg_free(rgb) }
        if status == -2 { throw Self.tooLarge(imageWidth, imageHeight) }
        guard status >= 0, let image = Self.copied(rgb, width, height) else {
            let hasJPEGSignature = bytes.count >= 2 && bytes[0] == 0xFF && bytes[1] == 0xD8
            throw PictureError(hasJPEGSignature ? "the JPEG header is incomplete or damaged" : "not a JPEG")
        }
        self.image = image
        self.width = Int(imageWidth)
        self.height = Int(imageHeight)
        rowsDecoded = Int(rows)
        complete = status == 0 && rowsDecoded == image.height
    }

    private init(png bytes: [UInt8]) throws(PictureError) {
        if let failure = Self.pngUnavailable { throw PictureError(failure) }
        var width: Int32 = 0
        var height: Int32 = 0
        var passes: Int32 = 0
        var rows: Int32 = 0
        var rgb: UnsafeMutablePointer<UInt8>?
        let status = bytes.withUnsafeBufferPointer {
            haul_png_decode_rgb($0.baseAddress, UInt($0.count), &width, &height, &rgb, &passes, &rows)
        }
        defer { free(rgb) }
        if status == -2 { throw Self.tooLarge(width, height) }
        guard status >= 0, let full = Self.copied(rgb, width, height) else {
            throw PictureError("the PNG header is incomplete or damaged")
        }
        self.width = Int(width)
        self.height = Int(height)
        image = Self.scaledDown(full)
        // An interlaced picture is whole (coarse) once its first pass is in; a plain one as far as its rows go.
        let decodedRows = passes > 0 ? Int(height) : Int(rows)
        rowsDecoded = decodedRows * image.height / Swift.max(1, Int(height))
        complete = status == 0
    }

    /// The decoder's packed RGB pixels as an image; nil when there are none.
    private static func copied(_ rgb: UnsafeMutablePointer<UInt8>?, _ width: Int32, _ height: Int32) -> RGBImage? {
        guard let rgb, width > 0, height > 0 else { return nil }
        let count = Int(width) * Int(height) * 3
        return RGBImage(width: Int(width), height: Int(height), pixels: Array(UnsafeBufferPointer(start: rgb, count: count)))
    }

    private static func tooLarge(_ width: Int32, _ height: Int32) -> PictureError {
        PictureError(width > 0 && height > 0 ? "too large to show (\(width)x\(height))" : "too large to show")
    }

    /// A picture over `maximumPixels`, halved until it is not (libpng has no scaled decoding).
    private static func scaledDown(_ image: RGBImage) -> RGBImage {
        var factor = 1
        while (image.width / factor) * (image.height / factor) > maximumPixels { factor *= 2 }
        guard factor > 1 else { return image }
        let (width, height) = (Swift.max(1, image.width / factor), Swift.max(1, image.height / factor))
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let source = ((y * factor) * image.width + x * factor) * 3
                let target = (y * width + x) * 3
                pixels[target] = image.pixels[source]
                pixels[target + 1] = image.pixels[source + 1]
                pixels[target + 2] = image.pixels[source + 2]
            }
        }
        return RGBImage(width: width, height: height, pixels: pixels) ?? image
    }

    /// Reads and decodes the file at `path`.
    package init(path: String) throws(PictureError) {
        try self.init(bytes: Self.read(path))
    }

    /// The whole file (a picture's compressed data is small enough to hold), or a one-line reason it cannot be read.
    static func read(_ path: String) throws(PictureError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw PictureError("cannot open: \(String(cString: strerror(errno)))", category: .fileIO) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw PictureError("cannot read: \(String(cString: strerror(errno)))", category: .fileIO)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw PictureError("not a regular file") }
        guard info.st_size <= maximumFileSize else {
            throw PictureError("too large to show (\(info.st_size) bytes)")
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        let done: Int
        do {
            // Short when the file shrank while reading: decode what is there.
            done = try FileIO.readFully(fd, into: &bytes)
        } catch {
            throw PictureError("cannot read: \(error)", category: .fileIO)
        }
        if done < bytes.count { bytes.removeSubrange(done...) }
        return bytes
    }
}
