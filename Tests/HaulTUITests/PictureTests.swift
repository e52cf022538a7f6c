import CJPEG
import CPNG
import Foundation
import TestSupport
import Testing
@testable import HaulTUI

/// The `v` picture: decoding with libjpeg, and libchafa's cells in each colour mode with the aspect kept.
@Suite struct PictureTests {
    // MARK: helpers

    /// An image from rows of RGB triples.
    private func image(_ rows: [[(UInt8, UInt8, UInt8)]]) -> RGBImage {
        RGBImage(width: rows[0].count, height: rows.count, pixels: rows.flatMap { $0.flatMap { [$0.0, $0.1, $0.2] } })!
    }

    private func solid(_ width: Int, _ height: Int, _ color: (UInt8, UInt8, UInt8)) -> RGBImage {
        image(Array(repeating: Array(repeating: color, count: width), count: height))
    }

    /// `pixels` as a JPEG file made with libjpeg.
    private func encode(_ image: RGBImage, quality: Int32 = 100, progressive: Bool) throws -> [UInt8] {
        var data: UnsafeMutablePointer<UInt8>?
        var length: UInt = 0
        let status = image.pixels.withUnsafeBufferPointer {
            haul_jpeg_encode_rgb($0.baseAddress, Int32(image.width), Int32(image.height), quality,
                                 progressive ? 1 : 0, &data, &length)
        }
        defer { haul_jpeg_free(data) }
        try #require(status == 0)
        return Array(UnsafeBufferPointer(start: try #require(data), count: Int(length)))
    }

    private func write(_ bytes: [UInt8], _ name: String, in dir: TempDirectory) throws -> String {
        let path = dir.file(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A smooth picture with detail everywhere, so every part of the file matters.
    private func gradient(_ width: Int, _ height: Int) -> RGBImage {
        image((0..<height).map { y in
            (0..<width).map { x in
                (UInt8(x * 255 / (width - 1)), UInt8(y * 255 / (height - 1)), UInt8((x + y) * 255 / (width + height - 2)))
            }
        })
    }

    private func close(_ color: PictureColor, to expected: (Int, Int, Int), within tolerance: Int = 24) -> Bool {
        guard case .trueColor(let r, let g, let b) = color else { return false }
        return abs(Int(r) - expected.0) <= tolerance && abs(Int(g) - expected.1) <= tolerance
            && abs(Int(b) - expected.2) <= tolerance
    }

    // MARK: exact cells from known pixels

    private let red: (UInt8, UInt8, UInt8) = (255, 0, 0)
    private let green: (UInt8, UInt8, UInt8) = (0, 255, 0)
    private let blue: (UInt8, UInt8, UInt8) = (0, 0, 255)
    private let white: (UInt8, UInt8, UInt8) = (255, 255, 255)
    private let black: (UInt8, UInt8, UInt8) = (0, 0, 0)
    private let gray: (UInt8, UInt8, UInt8) = (128, 128, 128)

    /// 2 wide, 4 tall: fits 2 × 2 cells at scale 1.
    private var twoByFour: RGBImage {
        image([[red, green], [blue, white], [black, gray], [white, black]])
    }

    /// The colours of a cell, foreground and background, as RGB.
    private func colors(_ cell: PictureCell) -> [(Int, Int, Int)] {
        [cell.foreground, cell.background].compactMap {
            if case .trueColor(let r, let g, let b) = $0 { return (Int(r), Int(g), Int(b)) }
            return nil
        }
    }

    private func near(_ a: (Int, Int, Int), _ b: (UInt8, UInt8, UInt8), within tolerance: Int = 40) -> Bool {
        abs(a.0 - Int(b.0)) <= tolerance && abs(a.1 - Int(b.1)) <= tolerance && abs(a.2 - Int(b.2)) <= tolerance
    }

    @Test func trueColourCellsCarryThePicturesColours() {
        // Red over blue, one cell's worth (a cell is twice as tall as wide): the cell is both colours.
        let picture = image(Array(repeating: Array(repeating: red, count: 16), count: 16)
                            + Array(repeating: Array(repeating: blue, count: 16), count: 16))
        let cells = ChafaPicture.cells(picture, columns: 1, lines: 1, capability: .trueColor)
        #expect(cells.count == 1 && cells[0].count == 1)
        let both = colors(cells[0][0])
        #expect(both.count == 2 && both.contains { near($0, red) } && both.contains { near($0, blue) }, "\(both)")
    }

    @Test func paletteCellsUseThePalettesColours() {
        let cells = ChafaPicture.cells(gradient(64, 48), columns: 16, lines: 6, capability: .palette256)
        #expect(!cells.isEmpty)
        let used = Set(cells.joined().flatMap { [$0.foreground, $0.background] })
        #expect(used.count > 8, "a gradient takes many palette entries: \(used)")
        for cell in cells.joined() {
            for color in [cell.foreground, cell.background] {
                switch color {
                case .palette256(let index): #expect(index >= 16, "the 16 system colours are the terminal's own")
                case .terminalDefault: break
                case .trueColor: Issue.record("true colour in a 256-colour picture")
                }
            }
        }
    }

    @Test func paletteIndexIsTheNearestEntry() {
        #expect(ChafaPicture.paletteIndex(255, 0, 0) == 196)
        #expect(ChafaPicture.paletteIndex(95, 135, 175) == 67)
        #expect(ChafaPicture.paletteIndex(128, 128, 128) == 244)
        #expect(ChafaPicture.paletteIndex(8, 8, 8) == 232)
        #expect(ChafaPicture.paletteIndex(238, 238, 238) == 255)
        #expect(ChafaPicture.paletteIndex(0, 0, 95) == 17)
    }

    @Test func withoutColourThePictureIsASCII() {
        let cells = ChafaPicture.cells(gradient(64, 48), columns: 16, lines: 6, capability: .shades)
        #expect(!cells.isEmpty)
        #expect(cells.joined().allSatisfy { $0.character.isASCII && $0.foreground == .terminalDefault })
        #expect(Set(cells.joined().map(\.character)).count > 1, "brightness shows as different characters")
    }

    // MARK: scaling

    @Test func aspectIsKeptWhenFitting() {
        let wide = ChafaPicture.cells(solid(100, 50, red), columns: 40, lines: 40, capability: .trueColor)
        #expect(wide.count == 10 && wide.allSatisfy { $0.count == 40 })
        let tall = ChafaPicture.cells(solid(30, 100, red), columns: 40, lines: 40, capability: .trueColor)
        #expect(tall.count == 40 && tall.allSatisfy { $0.count == 24 })
    }

    @Test func noRoomGivesNoCells() {
        #expect(ChafaPicture.cells(twoByFour, columns: 0, lines: 5, capability: .trueColor).isEmpty)
        #expect(ChafaPicture.cells(twoByFour, columns: 5, lines: 0, capability: .shades).isEmpty)
    }

    @Test func aLargePictureScalesDownToTheArea() {
        let big = gradient(2_000, 150)
        let cells = ChafaPicture.cells(big, columns: 80, lines: 24, capability: .trueColor)
        #expect(cells.count == 3 && cells[0].count == 80)
        // Left is dark in red, right is bright: the gradient survives the scaling.
        let left = colors(cells[1][0]).map(\.0).max() ?? 255
        let right = colors(cells[1][79]).map(\.0).min() ?? 0
        #expect(left < 40 && right > 215, "\(left) \(right)")
    }

    // MARK: from a JPEG file

    /// 32 × 32 in four 16 × 16 quadrants (one chroma block each): yellow, blue over white, black.
    private var quadrants: RGBImage {
        let yellow: (UInt8, UInt8, UInt8) = (255, 255, 0)
        return image((0..<32).map { y in
            (0..<32).map { x in
                switch (x < 16, y < 16) {
                case (true, true): yellow
                case (false, true): blue
                case (true, false): white
                case (false, false): black
                }
            }
        })
    }

    @Test(arguments: [false, true])
    func aKnownJPEGRendersToTheExpectedCells(progressive: Bool) throws {
        let dir = TempDirectory()
        let path = try write(try encode(quadrants, progressive: progressive), "quadrants.jpg", in: dir)

        let color = PictureView.render(path: path, width: 2, height: 1, capability: .trueColor)
        #expect(!color.failed && color.complete)
        #expect(color.caption == "quadrants.jpg  32x32")
        #expect(color.columns == 2 && color.lines == 1)
        let cells = try #require(color.rows.first)
        let yellow: (UInt8, UInt8, UInt8) = (255, 255, 0)
        #expect(colors(cells[0]).allSatisfy { near($0, yellow) || near($0, white) }, "\(colors(cells[0]))")
        #expect(colors(cells[1]).allSatisfy { near($0, blue) || near($0, black) }, "\(colors(cells[1]))")

        let shades = PictureView.render(path: path, width: 2, height: 1, capability: .shades)
        #expect(shades.rows.joined().allSatisfy { $0.character.isASCII })
    }

    @Test func aTruncatedProgressiveJPEGShowsTheWholePictureBlurred() throws {
        let dir = TempDirectory()
        let bytes = try encode(gradient(64, 48), quality: 90, progressive: true)
        let path = try write(Array(bytes[..<(bytes.count * 6 / 10)]), "cut.jpg", in: dir)
        let picture = PictureView.render(path: path, width: 32, height: 12, capability: .trueColor)
        #expect(!picture.failed)
        #expect(!picture.complete)
        #expect(picture.caption == "cut.jpg  64x48  partial")
        #expect(picture.columns == 32 && picture.lines == 12)
        // The bottom right is decoded picture (white), not the mid-gray fill.
        #expect(close(try #require(picture.rows.last?.last?.background), to: (255, 255, 255), within: 60))
    }

    @Test func aTruncatedBaselineJPEGShowsItsTopRows() throws {
        let dir = TempDirectory()
        let complete = gradient(256, 256)
        let bytes = try encode(complete, quality: 90, progressive: false)
        let path = try write(Array(bytes[..<(bytes.count / 2)]), "half.jpg", in: dir)
        let decoded = try PictureImage(path: path)
        #expect(!decoded.complete)
        let picture = PictureView.render(decoded, name: "half.jpg", width: 64, height: 32, capability: .trueColor)
        #expect(picture.caption.hasPrefix("half.jpg  256x256  partial"))
        #expect(picture.columns == 64 && picture.lines == 32)
        // The top is the picture; the bottom, after the data ran out, is not.
        let topLeft = complete[0, 0]
        #expect(close(try #require(picture.rows.first?.first?.foreground),
                      to: (Int(topLeft.r), Int(topLeft.g), Int(topLeft.b))))
        #expect(!close(try #require(picture.rows.last?.last?.background), to: (255, 255, 255), within: 60))
    }

    @Test func unreadableFilesGiveAMessageNotAPicture() throws {
        let dir = TempDirectory()
        let jpeg = try encode(gradient(16, 16), progressive: false)
        let cases: [(String, [UInt8]?, String)] = [
            ("missing.jpg", nil, "cannot show missing.jpg: cannot open: No such file or directory"),
            ("empty.jpg", [], "cannot show empty.jpg: not a JPEG"),
            ("text.jpg", Array("hello, this is not a picture".utf8), "cannot show text.jpg: not a JPEG"),
            ("header.jpg", Array(jpeg[..<20]), "cannot show header.jpg: the JPEG header is incomplete or damaged"),
        ]
        for (name, bytes, caption) in cases {
            let path = try bytes.map { try write($0, name, in: dir) } ?? dir.file(name)
            let picture = PictureView.render(path: path, width: 40, height: 20, capability: .trueColor)
            #expect(picture.failed && !picture.complete, "\(name)")
            #expect(picture.rows.isEmpty, "\(name)")
            #expect(picture.caption == caption)
        }
        let folder = PictureView.render(path: dir.path, width: 40, height: 20, capability: .shades)
        #expect(folder.failed && folder.caption.hasSuffix("not a regular file"))
    }

    // MARK: PNG

    private func encodePNG(_ image: RGBImage, interlaced: Bool) throws -> [UInt8] {
        var data: UnsafeMutablePointer<UInt8>?
        var length: UInt = 0
        let status = image.pixels.withUnsafeBufferPointer {
            haul_png_encode_rgb($0.baseAddress, Int32(image.width), Int32(image.height), interlaced ? 1 : 0, &data, &length)
        }
        defer { free(data) }
        try #require(status == 0)
        return Array(UnsafeBufferPointer(start: try #require(data), count: Int(length)))
    }

    @Test func aPNGDecodesExactly() throws {
        let picture = gradient(64, 48)
        for interlaced in [false, true] {
            let decoded = try PictureImage(bytes: try encodePNG(picture, interlaced: interlaced))
            #expect(decoded.complete && decoded.width == 64 && decoded.height == 48)
            let differing = zip(decoded.image.pixels, picture.pixels).enumerated().filter { $0.element.0 != $0.element.1 }
            #expect(differing.isEmpty, "lossless (interlaced: \(interlaced)): \(differing.count) bytes differ, first \(differing.first.map { "\($0.offset): \($0.element)" } ?? "")")
        }
    }

    /// Half an interlaced PNG is the whole picture in coarse blocks; half a plain one, its top rows.
    @Test func aTruncatedInterlacedPNGShowsTheWholePictureCoarse() throws {
        let picture = gradient(64, 48)
        let interlaced = try encodePNG(picture, interlaced: true)
        let coarse = try PictureImage(bytes: Array(interlaced.prefix(interlaced.count / 2)))
        #expect(!coarse.complete && coarse.width == 64)
        // The bottom right corner is already near the picture's colour there, not mid-gray.
        let corner = coarse.image[60, 44]
        let truth = picture[60, 44]
        #expect(abs(Int(corner.r) - Int(truth.r)) < 40 && abs(Int(corner.g) - Int(truth.g)) < 40, "\(corner) vs \(truth)")
        let plain = try encodePNG(picture, interlaced: false)
        let top = try PictureImage(bytes: Array(plain.prefix(plain.count / 2)))
        #expect(!top.complete && top.rowsDecoded > 0 && top.rowsDecoded < 48)
        #expect(top.image[60, 47] == (128, 128, 128), "rows not reached stay mid-gray")
        #expect(top.image[5, 0] == picture[5, 0])
    }

    @Test func hostilePNGsGiveAReasonNotAPicture() throws {
        var bytes = try encodePNG(gradient(16, 16), interlaced: true)
        // IHDR at byte 8: length, "IHDR", width, height, ...; its CRC follows the 13 data bytes.
        func setSize(_ width: UInt32, _ height: UInt32) {
            for (i, value) in [width, height].enumerated() {
                for b in 0..<4 { bytes[16 + i * 4 + b] = UInt8((value >> (24 - 8 * UInt32(b))) & 0xFF) }
            }
            let crc = crc32(Array(bytes[12..<29]))
            for b in 0..<4 { bytes[29 + b] = UInt8((crc >> (24 - 8 * UInt32(b))) & 0xFF) }
        }
        setSize(20_000, 20_000)
        #expect(throws: PictureError("too large to show (20000x20000)")) { try PictureImage(bytes: bytes) }
        setSize(65_535, 65_535)
        #expect(throws: PictureError.self) { try PictureImage(bytes: bytes) }
        var random = SplitMix64(seed: 0x504E_47)
        let seed = try encodePNG(gradient(40, 30), interlaced: true)
        for _ in 0..<150 {
            var damaged = Array(seed[..<Int.random(in: 0...seed.count, using: &random)])
            for _ in 0..<Int.random(in: 0...6, using: &random) where damaged.count > 8 {
                damaged[Int.random(in: 8..<damaged.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            if let picture = try? PictureImage(bytes: damaged) {
                #expect(picture.image.pixels.count == picture.image.width * picture.image.height * 3)
            }
        }
    }

    /// CRC-32 (ISO-HDLC), as PNG chunks carry it.
    private func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return crc ^ 0xFFFF_FFFF
    }

    @Test func damagedJPEGsNeverCrash() throws {
        var random = SplitMix64(seed: 0x4A50_4547)
        var shown = 0
        var refused = 0
        for progressive in [false, true] {
            let bytes = try encode(gradient(40, 30), quality: 85, progressive: progressive)
            for _ in 0..<150 {
                var damaged = Array(bytes[..<Int.random(in: 0...bytes.count, using: &random)])
                for _ in 0..<Int.random(in: 0...6, using: &random) where !damaged.isEmpty {
                    damaged[Int.random(in: 0..<damaged.count, using: &random)] = UInt8.random(in: 0...255,
                                                                                              using: &random)
                }
                let outcome = (try? PictureImage(bytes: damaged)).map {
                    PictureView.render($0, name: "x.jpg", width: 20, height: 8, capability: .palette256)
                }
                if let picture = outcome {
                    shown += 1
                    // A damaged header may change the size, never the fit.
                    #expect(picture.columns <= 20 && picture.lines <= 8 && !picture.rows.isEmpty)
                    #expect(picture.rows.allSatisfy { $0.count == picture.columns })
                } else {
                    refused += 1
                }
            }
        }
        #expect(shown > 0 && refused > 0, "both outcomes occur: \(shown) shown, \(refused) refused")
    }

    /// How the full screen's pictures come out per mode: an image protocol's sequence sized in the terminal's
    /// own pixels, 24-bit symbols one line per row, or cells for curses.
    @Test func eachDrawingModeGivesWhatTheScreenWrites() throws {
        let image = try PictureImage(bytes: try encode(gradient(64, 48), quality: 90, progressive: false))
        let cell = CellPixels(width: 8, height: 16)
        func render(_ mode: PictureMode?, _ capability: ColorCapability = .trueColor) -> PictureCells {
            PictureView.render(image, name: "g.jpg", width: 40, height: 10, capability: capability,
                               drawing: PictureDrawing(mode: mode, cell: cell))
        }
        let kitty = try #require(render(.kitty).image)
        #expect(kitty.lines.count == 1 && String(decoding: kitty.lines[0].prefix(7), as: UTF8.self) == "\u{1b}_Ga=T,")
        let header = String(decoding: kitty.lines[0].prefix(60), as: UTF8.self)
        #expect(header.contains("s=\(kitty.columns * 8),v=\(kitty.rows * 16),c=\(kitty.columns),r=\(kitty.rows)"), "\(header)")
        #expect(String(decoding: try #require(render(.sixel).image).lines[0].prefix(2), as: UTF8.self) == "\u{1b}P")
        #expect(String(decoding: try #require(render(.iterm).image).lines[0].prefix(12), as: UTF8.self) == "\u{1b}]1337;File=")

        let symbols = try #require(render(.symbols).image)
        #expect(symbols.lines.count == symbols.rows && symbols.rows == render(.symbols).lines)
        #expect(symbols.lines.allSatisfy { String(decoding: $0, as: UTF8.self).contains("8;2;") }, "24-bit colours")
        #expect(symbols.lines.allSatisfy { !$0.contains(UInt8(ascii: "\n")) })

        // Symbols in the palette, and anything asked as cells, are cells for curses.
        #expect(render(.symbols, .palette256).image == nil && !render(.symbols, .palette256).rows.isEmpty)
        #expect(render(nil).image == nil && !render(nil).rows.isEmpty)
        #expect(render(PictureMode.none).image == nil)
    }

    /// The terminal's cell size sets the fit: a 4:3 picture on square cells takes half the lines it takes
    /// on cells twice as tall as wide.
    @Test func theCellSizeSetsTheAspect() throws {
        let image = try PictureImage(bytes: try encode(gradient(64, 48), quality: 90, progressive: false))
        func lines(_ cell: CellPixels) -> Int {
            PictureView.render(image, name: "g.jpg", width: 32, height: 100, capability: .palette256,
                               drawing: PictureDrawing(mode: nil, cell: cell)).lines
        }
        #expect(lines(CellPixels(width: 10, height: 10)) == 24)
        #expect(lines(.assumed) == 12)
    }

    @Test func capabilityDetection() {
        #expect(ColorCapability.detect(colors: 256, environment: ["COLORTERM": "truecolor"]) == .trueColor)
        #expect(ColorCapability.detect(colors: 16_777_216, environment: [:]) == .trueColor)
        #expect(ColorCapability.detect(colors: 256, environment: ["COLORTERM": "yes"]) == .palette256)
        #expect(ColorCapability.detect(colors: 8, environment: [:]) == .shades)
        #expect(ColorCapability.detect(colors: 0, environment: ["COLORTERM": "truecolor"]) == .shades)
    }
}

