import HaulCore

/// A JPEG laid out as terminal cells, with one caption line saying what it is or why it cannot be shown.
struct PictureCells: Sendable, Equatable {
    /// Rows of cells, top first, all of `columns` cells; empty when decoding failed or there was no room.
    var rows: [[PictureCell]]
    /// One line: "photo.jpg  4000x3000", "photo.partial.jpg  4000x3000  partial", or
    /// "cannot show photo.jpg: not a JPEG".
    var caption: String
    /// Drawn by the terminal itself instead of as `rows` (an image protocol, or 24-bit colour).
    var image: TerminalImage?
    /// Decoding failed; `caption` says why.
    var failed: Bool
    /// The data held the whole picture (false for a preview or a damaged file, and when decoding failed).
    var complete: Bool

    init(rows: [[PictureCell]], caption: String, failed: Bool, complete: Bool) {
        self.rows = rows
        self.caption = caption
        self.failed = failed
        self.complete = complete
    }

    var columns: Int { image?.columns ?? rows.first?.count ?? 0 }
    var lines: Int { image?.rows ?? rows.count }
}

/// How a full screen draws pictures: the mode asked for (`--pictures`, the config, or what the terminal
/// supports), the cell size the terminal reports, and the environment that names the terminal.
struct PictureDrawing: Sendable, Equatable {
    /// nil: always symbol cells drawn by the screen (as curses can, in its colours).
    var mode: PictureMode?
    var cell: CellPixels
    var environment: [String: String]

    init(mode: PictureMode?, cell: CellPixels = .assumed, environment: [String: String] = [:]) {
        self.mode = mode
        self.cell = cell
        self.environment = environment
    }

    /// Symbol cells drawn by the screen itself.
    static let cells = PictureDrawing(mode: nil)

    /// The mode the terminal draws in itself, nil for cells the screen draws: an image protocol, or symbols
    /// when their colours are 24-bit.
    func terminalMode(_ capability: ColorCapability) -> PictureMode? {
        switch mode {
        case .kitty, .sixel, .iterm: mode
        case .symbols: capability == .trueColor ? .symbols : nil
        case PictureMode.none?, nil: nil
        }
    }
}

/// What the `v` key shows: a JPEG file, complete or a partial preview, scaled into an area of the screen.
///
/// Decoding a large photo takes a moment (about a tenth of a second per 10 Mpixel); a caller that must stay
/// responsive runs it off its drawing thread, and keeps the `PictureImage` to re-render after a resize.
enum PictureView {
    /// Decodes the file at `path` and fits it into `width` × `height` cells (the caption is not counted in them).
    /// Never crashes: a truncated file shows what decodes; an unreadable one gives a caption saying why.
    static func render(path: String, width: Int, height: Int, capability: ColorCapability,
                               drawing: PictureDrawing = .cells) -> PictureCells {
        let name = FilePath.baseName(of: path)
        do {
            let image = try PictureImage(path: path)
            return render(image, name: name, width: width, height: height, capability: capability, drawing: drawing)
        } catch {
            return PictureCells(rows: [], caption: "cannot show \(name): \(error.message)", failed: true,
                                complete: false)
        }
    }

    /// Fits an already decoded image into `width` × `height` cells; `name` goes into the caption.
    static func render(_ image: PictureImage, name: String, width: Int, height: Int,
                              capability: ColorCapability, drawing: PictureDrawing = .cells) -> PictureCells {
        var rows: [[PictureCell]] = []
        var printed: TerminalImage?
        if let mode = drawing.terminalMode(capability) {
            printed = TerminalImage.make(image.image, columns: width, lines: height, mode: mode, cell: drawing.cell,
                                         environment: drawing.environment)
        } else {
            rows = ChafaPicture.cells(image.image, columns: width, lines: height, capability: capability,
                                      cell: drawing.cell)
        }
        var caption = "\(name)  \(image.width)x\(image.height)"
        if !image.complete {
            // Rows in the picture's own units (a large one is decoded scaled down).
            let rows = image.rowsDecoded * image.height / Swift.max(1, image.image.height)
            caption += image.rowsDecoded < image.image.height ? "  partial: \(rows) of \(image.height) rows" : "  partial"
        }
        var cells = PictureCells(rows: rows, caption: caption, failed: false, complete: image.complete)
        cells.image = printed
        return cells
    }

    /// What a download's details say of its picture: its size and how much of it decodes.
    static func describe(path: String) -> String {
        do {
            return describe(try PictureImage(path: path))
        } catch {
            return "cannot preview: \(error.message)"
        }
    }

    static func describe(_ image: PictureImage) -> String {
        let size = "\(image.width)x\(image.height)"
        if image.complete { return size + ", complete" }
        if image.rowsDecoded < image.image.height {
            let percent = image.rowsDecoded * 100 / Swift.max(1, image.image.height)
            return size + ", \(percent) % of the rows decode"
        }
        // Every row came out, but not every scan: a progressive picture, whole and not yet sharp.
        return size + ", the whole picture decodes, not yet sharp"
    }
}
