/// A JPEG laid out as terminal cells, with one caption line saying what it is or why it cannot be shown.
package struct PictureCells: Sendable, Equatable {
    /// Rows of cells, top first, all of `columns` cells; empty when decoding failed or there was no room.
    package var rows: [[PictureCell]]
    /// One line: "photo.jpg  4000x3000", "photo.partial.jpg  4000x3000  partial", or
    /// "cannot show photo.jpg: not a JPEG".
    package var caption: String
    /// Decoding failed; `caption` says why.
    package var failed: Bool
    /// The data held the whole picture (false for a preview or a damaged file, and when decoding failed).
    package var complete: Bool

    package init(rows: [[PictureCell]], caption: String, failed: Bool, complete: Bool) {
        self.rows = rows
        self.caption = caption
        self.failed = failed
        self.complete = complete
    }

    package var columns: Int { rows.first?.count ?? 0 }
    package var lines: Int { rows.count }
}

/// What the `v` key shows: a JPEG file, complete or a partial preview, scaled into an area of the screen.
///
/// Decoding a large photo takes a moment (about a tenth of a second per 10 Mpixel); a caller that must stay
/// responsive runs it off its drawing thread, and keeps the `PictureImage` to re-render after a resize.
package enum PictureView {
    /// Decodes the file at `path` and fits it into `width` × `height` cells (the caption is not counted in them).
    /// Never crashes: a truncated file shows what decodes; an unreadable one gives a caption saying why.
    package static func render(path: String, width: Int, height: Int, capability: ColorCapability) -> PictureCells {
        let name = baseName(path)
        do {
            let image = try PictureImage(path: path)
            return render(image, name: name, width: width, height: height, capability: capability)
        } catch {
            return PictureCells(rows: [], caption: "cannot show \(name): \(error.message)", failed: true,
                                complete: false)
        }
    }

    /// Fits an already decoded image into `width` × `height` cells; `name` goes into the caption.
    package static func render(_ image: PictureImage, name: String, width: Int, height: Int,
                              capability: ColorCapability) -> PictureCells {
        let rows = ChafaPicture.cells(image.image, columns: width, lines: height, capability: capability)
        var caption = "\(name)  \(image.width)x\(image.height)"
        if !image.complete {
            // Rows in the picture's own units (a large one is decoded scaled down).
            let rows = image.rowsDecoded * image.height / Swift.max(1, image.image.height)
            caption += image.rowsDecoded < image.image.height ? "  partial: \(rows) of \(image.height) rows" : "  partial"
        }
        return PictureCells(rows: rows, caption: caption, failed: false, complete: image.complete)
    }

    /// What a download's details say of its picture: its size and how much of it decodes.
    package static func describe(path: String) -> String {
        do {
            return describe(try PictureImage(path: path))
        } catch {
            return "cannot preview: \(error.message)"
        }
    }

    package static func describe(_ image: PictureImage) -> String {
        let size = "\(image.width)x\(image.height)"
        if image.complete { return size + ", complete" }
        if image.rowsDecoded < image.image.height {
            let percent = image.rowsDecoded * 100 / Swift.max(1, image.image.height)
            return size + ", \(percent) % of the rows decode"
        }
        // Every row came out, but not every scan: a progressive picture, whole and not yet sharp.
        return size + ", the whole picture decodes, not yet sharp"
    }

    private static func baseName(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}
