import FoundationEssentials
import Glibc

/// The preview a cancelled JPEG or PNG download leaves beside its target: `STEM.partial.EXT`, holding the contiguous
/// prefix received so far, followed by an EOI marker (FF D9) when the prefix does not already end with one.
///
/// A progressive JPEG cut after its first scan (or an interlaced PNG after its first passes) decodes to the whole
/// picture, blurred; a baseline one (or a plain PNG) to its top
/// rows. `NAME.part` and its state are only read, never changed, so the download stays resumable, and finishing it
/// later leaves the preview as it was.
enum PartialPreview {
    /// The End Of Image marker that closes every JPEG.
    static let endOfImage: [UInt8] = [0xFF, 0xD9]

    /// Bytes copied per read: the prefix streams through this buffer, never the whole file in memory.
    static let chunkSize = 256 * 1024

    /// Content types that name a JPEG (`image/jpeg`, and the old `image/pjpeg` and `image/jpg` spellings) or a PNG.
    private static let pictureContentTypes: Set<String> = ["image/jpeg", "image/pjpeg", "image/jpg", "image/png"]

    /// Whether a download of `name` served as `contentType` is partial-capable: the name ends in .jpg, .jpeg or
    /// .png (any case), or the content type is `image/jpeg` or `image/png` (parameters and case ignored).
    static func isPicture(name: String?, contentType: String?) -> Bool {
        if let name, DownloadContext.isPartialCapable(name: name) { return true }
        return isPicture(contentType: contentType)
    }

    /// Whether a `Content-Type` value names a JPEG or PNG: "image/jpeg", "IMAGE/JPEG; q=1", "image/png", ...
    static func isPicture(contentType: String?) -> Bool {
        guard let contentType else { return false }
        let mediaType = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return pictureContentTypes.contains(mediaType.trimmingWhitespace().lowercased())
    }

    /// Where the preview of `targetPath` goes: "dir/photo.jpg" -> "dir/photo.partial.jpg",
    /// "dir/photo" -> "dir/photo.partial".
    static func previewPath(for targetPath: String) -> String {
        let (stem, ext) = FileNaming.split(FilePath.baseName(of: targetPath))
        let name = stem + ".partial" + ext
        return FilePath.hasSeparator(targetPath) ? FilePath.join(FilePath.parent(of: targetPath), name) : name
    }

    /// Writes the preview of a download that ended by cancellation, when it is wanted.
    ///
    /// Wanted when the calling task has `DownloadContext.supportsPartialDownloads` bound to true, or when
    /// `contentType` is a JPEG or PNG type, and at least one byte arrived. Call it from the download's task (the
    /// task-local value does not reach other threads).
    ///
    /// - Parameters:
    ///   - partPath: the download's `NAME.part`; only read.
    ///   - targetPath: where the finished file will go; the preview goes beside it.
    ///   - contiguousBytes: how many bytes from offset 0 are known to be on disk without a hole (for a segmented
    ///     download, the first range only). More than the part file holds is clamped to its size.
    ///   - contentType: the response's `Content-Type`, if any.
    /// - Returns: the preview's path, or nil when no preview is wanted or there is nothing to show.
    /// - Throws: `.fileIO` when the part file cannot be read or the preview cannot be written; no temporary file
    ///   is left behind then, and an earlier preview at that path stays as it was.
    @discardableResult
    static func saveIfWanted(partPath: String, targetPath: String, contiguousBytes: Int64,
                                    contentType: String?) throws(HaulError) -> String? {
        guard isWanted(contiguousBytes: contiguousBytes, contentType: contentType) else { return nil }
        let path = previewPath(for: targetPath)
        let written = try write(prefixOf: partPath, length: contiguousBytes, to: path)
        return written > 0 ? path : nil
    }

    private static func isWanted(contiguousBytes: Int64, contentType: String?) -> Bool {
        (DownloadContext.supportsPartialDownloads || isPicture(contentType: contentType)) && contiguousBytes > 0
    }

    /// `saveIfWanted` for a download's own open part file: read through its descriptor, never by name.
    static func saveIfWanted(part: PartFile, targetPath: String, contiguousBytes: Int64,
                             contentType: String?) throws(HaulError) -> String? {
        guard isWanted(contiguousBytes: contiguousBytes, contentType: contentType) else { return nil }
        let path = previewPath(for: targetPath)
        let written = try part.withDescriptor { (fd) throws(HaulError) in
            try write(prefixOf: fd, sourcePath: part.path, length: contiguousBytes, to: path)
        }
        return written > 0 ? path : nil
    }

    /// Copies up to `length` bytes from the start of `source` into a new file at `destination`, adding the EOI
    /// marker when missing, atomically (temporary file, fsync, rename, directory sync). Returns the bytes copied
    /// from `source`; when that is 0 nothing is written.
    static func write(prefixOf source: String, length: Int64, to destination: String) throws(HaulError) -> Int64 {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw PartFile.error("cannot read", source) }
        defer { close(input) }
        return try write(prefixOf: input, sourcePath: source, length: length, to: destination)
    }

    /// `write(prefixOf:length:to:)` from an open descriptor (`pread`, so its offset does not move).
    static func write(prefixOf input: Int32, sourcePath source: String, length: Int64,
                      to destination: String) throws(HaulError) -> Int64 {
        var info = stat()
        guard fstat(input, &info) == 0 else { throw PartFile.error("cannot read", source) }
        guard length > 0, info.st_size > 0 else { return 0 }
        let directory = try OutputDirectory(FilePath.parent(of: destination))
        var copied: Int64 = 0
        try directory.replace(FilePath.baseName(of: destination), mode: 0o644) { (output) throws(HaulError) in
            copied = try copy(prefixOf: input, sourcePath: source, length: length, to: output)
        }
        directory.sync()
        return copied
    }

    /// Streams the prefix through a small buffer into `output`, then the EOI marker when it does not end
    /// with one. Returns the bytes copied from the source (fewer than `length` when it is shorter).
    private static func copy(prefixOf input: Int32, sourcePath source: String, length: Int64,
                             to output: PartFile) throws(HaulError) -> Int64 {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var copied: Int64 = 0
        var tail: [UInt8] = []
        var isPNG = false
        while copied < length {
            let want = UnsafeMutableRawBufferPointer(rebasing: buffer[..<Int(min(Int64(chunkSize), length - copied))])
            let count: Int
            do { count = try FileIO.read(input, into: want, at: copied) } catch {
                throw PartFile.error("cannot read", source, error.code)
            }
            if count == 0 { break }  // the part file is shorter than asked: what is there is the prefix
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[..<count])
            if copied == 0 { isPNG = chunk.starts(with: [0x89, 0x50, 0x4E, 0x47]) }
            try output.write(chunk, at: copied)
            tail = Array((tail + chunk.suffix(2)).suffix(2))
            copied += Int64(count)
        }
        // A JPEG's prefix gets its End Of Image; a PNG's is read as far as it goes without one.
        if copied > 0, !isPNG, tail != endOfImage { try output.write(endOfImage, at: copied) }
        return copied
    }
}
