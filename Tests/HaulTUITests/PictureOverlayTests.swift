import HaulCore
import Testing
@testable import HaulTUI

/// The `v` overlay around the picture widget's cells, and the colours the terminal gets for them.
@Suite struct PictureOverlayTests {
    let size = Size(columns: 40, rows: 10)

    private var cells: PictureCells {
        let top = PictureCell("▀", foreground: .palette256(196), background: .trueColor(r: 0, g: 0, b: 255))
        let plain = PictureCell("░", foreground: .terminalDefault, background: .terminalDefault)
        return PictureCells(rows: [[top, top, top, top], [plain, plain, plain, plain]],
                            caption: "photo.jpg  8x4", failed: false, complete: true)
    }

    @Test func theKeyOpensTheOverlayAndTheDecodedPictureFillsIt() {
        var state = Fixtures.state(size, rows: [Fixtures.row(1, "photo.jpg", .done)])
        #expect(update(&state, .key(.character("v"))) == [.showPicture(path: "downloads/photo.jpg")])
        #expect(render(state, size: size).lines.contains { $0.contains("Decoding photo.jpg") })
        _ = update(&state, .pictureLoaded(path: "elsewhere.jpg", cells))
        #expect(state.picture == nil, "a picture for another path is dropped")
        _ = update(&state, .pictureLoaded(path: "downloads/photo.jpg", cells))
        #expect(state.picture == cells)
        let grid = render(state, size: size)
        #expect(grid.lines == [
            "┌─ photo.jpg ──────────────────────────┐",
            "│                                      │",
            "│                                      │",
            "│                 ▀▀▀▀                 │",
            "│                 ░░░░                 │",
            "│                                      │",
            "│                                      │",
            "│                                      │",
            "│ photo.jpg  8x4  (Esc closes)         │",
            "└──────────────────────────────────────┘",
        ])
        #expect(grid[18, 3].style == Style(foreground: .palette(196), background: .rgb(0, 0, 255)))
        #expect(grid[18, 4].style == Style())
    }

    /// A picture the terminal draws itself (an image protocol, or 24-bit symbols): the overlay leaves its
    /// cells blank and places it, centred as cells would be, for the screen to write after the frame.
    @Test func aTerminalDrawnPictureIsPlacedOverBlankCells() {
        var state = Fixtures.state(size, rows: [Fixtures.row(1, "photo.jpg", .done)])
        _ = update(&state, .key(.character("v")))
        var picture = PictureCells(rows: [], caption: "photo.jpg  8x4", failed: false, complete: true)
        picture.image = TerminalImage(mode: .sixel, lines: [Array("\u{1b}Pq#0~-\u{1b}\\".utf8)], columns: 6, rows: 2)
        _ = update(&state, .pictureLoaded(path: "downloads/photo.jpg", picture))
        let grid = render(state, size: size)
        #expect(grid.image == PlacedImage(x: 17, y: 3, image: picture.image!))
        #expect(grid.lines[3] == "│                                      │" && grid.lines[4] == grid.lines[3])
        #expect(grid.lines[8] == "│ photo.jpg  8x4  (Esc closes)         │")
        _ = update(&state, .key(.escape))
        #expect(render(state, size: size).image == nil, "closed: nothing for the terminal to draw")

        // One that does not fit the area (a frame drawn before the picture is fitted to a smaller screen).
        _ = update(&state, .key(.character("v")))
        picture.image?.columns = 60
        _ = update(&state, .pictureLoaded(path: "downloads/photo.jpg", picture))
        #expect(render(state, size: size).image == nil)
    }

    /// Pictures in 24-bit colour only where the terminal says it has it and draws them itself; through
    /// curses, the 256-colour palette at most.
    @Test func pictureColoursFollowTheTerminalAndWhoDraws() {
        let info = ScreenInfo(size: size, colors: true, unicode: true, colorCount: 256)
        let truecolor = ["COLORTERM": "truecolor"]
        let symbols = PictureDrawing(mode: .symbols)
        #expect(AppLoop<ContinuousClock>.pictureColors(info, drawing: symbols, environment: truecolor) == .trueColor)
        #expect(AppLoop<ContinuousClock>.pictureColors(info, drawing: .cells, environment: truecolor) == .palette256)
        #expect(AppLoop<ContinuousClock>.pictureColors(info, drawing: symbols, environment: [:]) == .palette256)
        var eight = info
        eight.colorCount = 8
        #expect(AppLoop<ContinuousClock>.pictureColors(eight, drawing: .cells, environment: [:]) == .shades)
        var none = info
        none.colors = false
        #expect(AppLoop<ContinuousClock>.pictureColors(none, drawing: symbols, environment: truecolor) == .shades)
    }

    @Test func resizingFitsThePictureAgainAndClosingForgetsIt() {
        var state = Fixtures.state(size, rows: [Fixtures.row(1, "photo.jpg", .done)])
        _ = update(&state, .key(.character("v")))
        _ = update(&state, .pictureLoaded(path: "downloads/photo.jpg", cells))
        #expect(update(&state, .resize(Size(columns: 80, rows: 24))) == [.showPicture(path: "downloads/photo.jpg")])
        _ = update(&state, .key(.escape))
        #expect(state.overlay == nil)
        #expect(state.picture == nil)
        #expect(update(&state, .resize(size)) == [])
    }

    @Test func aCancelledJPEGShowsThePreviewTheEngineReported() {
        var state = Fixtures.state(size, rows: [Fixtures.row(1, "photo.jpg", .cancelled)])
        #expect(update(&state, .key(.character("v"))) == [], "no preview yet")
        _ = update(&state, .manager(.fact(id: 1, .previewSaved(path: "/d/photo.partial.jpg"))))
        #expect(DownloadList.stateText(state.rows[0]) == "cancelled, partial preview saved")
        #expect(update(&state, .key(.character("v"))) == [.showPicture(path: "/d/photo.partial.jpg")])
    }

    /// `v` on a JPEG that is downloading shows its part, decoded again each second, and moves to the finished
    /// file when it is done.
    @Test func aDownloadingJPEGIsShownLiveAndThenAsTheFinishedFile() {
        var state = Fixtures.state(size, rows: [Fixtures.row(1, "photo.jpg", .downloading, completed: 1 << 20)])
        state.clockRunning = true
        #expect(update(&state, .key(.character("v"))) == [.showPicture(path: "downloads/photo.jpg.part")])
        _ = update(&state, .pictureLoaded(path: "downloads/photo.jpg.part", cells))
        #expect(state.picture == cells)
        #expect(update(&state, .tick) == [.showPicture(path: "downloads/photo.jpg.part")], "decoded again")
        let result = DownloadResult(file: "photo.jpg", path: "downloads/photo.jpg", bytes: 20 << 20, skipped: false)
        // Saved under another name (something appeared at photo.jpg): the picture follows the download.
        var renamed = result
        renamed.file = "photo.1.jpg"
        renamed.path = "downloads/photo.1.jpg"
        #expect(update(&state, .manager(.finished(id: 1, renamed, seconds: 3))).isEmpty)
        let effects = update(&state, .manager(.state(id: 1, .done)))
        #expect(state.overlay == .picture(path: "downloads/photo.1.jpg"))
        #expect(effects.contains(.showPicture(path: "downloads/photo.1.jpg")))
        #expect(state.picture == cells, "the last picture stays until the finished one is decoded")
        #expect(update(&state, .tick).isEmpty, "a finished file is not decoded again")
        // Nothing on disk yet: nothing to show.
        var other = Fixtures.state(size, rows: [Fixtures.row(1, "photo.jpg", .connecting)])
        other.clockRunning = true
        #expect(update(&other, .key(.character("v"))) == [])
    }

    @Test func theDetailsSayWhatThePictureIsAndFollowTheDownload() {
        var state = Fixtures.state(size, rows: [Fixtures.row(1, "photo.jpg", .downloading, completed: 1 << 20)])
        state.clockRunning = true
        #expect(update(&state, .key(.enter)) == [.describePicture(1, path: "downloads/photo.jpg.part")])
        _ = update(&state, .pictureDescribed(1, "4000x3000, 42 % of the rows decode"))
        #expect(DetailsOverlay.lines(state.rows[0]).contains { $0.0 == "Image  4000x3000, 42 % of the rows decode" })
        #expect(update(&state, .tick) == [.describePicture(1, path: "downloads/photo.jpg.part")])
        var plain = Fixtures.state(size, rows: [Fixtures.row(1, "data.bin", .downloading, completed: 1 << 20)])
        plain.clockRunning = true
        #expect(update(&plain, .key(.enter)) == [], "no picture to describe")
    }

    @Test func coloursMapToWhatTheTerminalHas() {
        #expect(ColorMapping.number(.red, colors: 8) == 1)
        #expect(ColorMapping.number(.palette(196), colors: 256) == 196)
        #expect(ColorMapping.number(.palette(196), colors: 8) == 1, "bright red becomes red")
        #expect(ColorMapping.number(.rgb(255, 0, 0), colors: 256) == 196)
        #expect(ColorMapping.number(.rgb(0, 0, 0), colors: 256) == 16)
        #expect(ColorMapping.number(.rgb(128, 128, 128), colors: 256) == 244, "a grey takes the grey ramp")
        #expect(ColorMapping.number(.rgb(0, 200, 0), colors: 8) == 2)
        #expect(ColorMapping.number(.rgb(20, 20, 20), colors: 8) == 0)
        #expect(ColorMapping.number(.rgb(250, 250, 250), colors: 8) == 7)
    }
}
