import CJPEG
import Foundation
import TestSupport
import Testing
@testable import HaulTUI

/// The `v` picture: decoding with libjpeg, scaling with the aspect kept, and half-block cells in each colour mode.
@Suite struct PictureTests {
    // MARK: helpers

    private static let half = PictureRenderer.upperHalfBlock

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

    @Test func trueColorCellsAreTopPixelOnBottomPixel() {
        let cells = PictureRenderer.render(twoByFour, columns: 2, lines: 2, capability: .trueColor)
        let t = { (c: (UInt8, UInt8, UInt8)) in PictureColor.trueColor(r: c.0, g: c.1, b: c.2) }
        #expect(cells == [
            [PictureCell(Self.half, foreground: t(red), background: t(blue)),
             PictureCell(Self.half, foreground: t(green), background: t(white))],
            [PictureCell(Self.half, foreground: t(black), background: t(white)),
             PictureCell(Self.half, foreground: t(gray), background: t(black))],
        ])
    }

    @Test func paletteCellsUseTheCubeAndTheGrayRamp() {
        let cells = PictureRenderer.render(twoByFour, columns: 2, lines: 2, capability: .palette256)
        #expect(cells == [
            [PictureCell(Self.half, foreground: .palette256(196), background: .palette256(21)),
             PictureCell(Self.half, foreground: .palette256(46), background: .palette256(231))],
            [PictureCell(Self.half, foreground: .palette256(16), background: .palette256(231)),
             PictureCell(Self.half, foreground: .palette256(244), background: .palette256(16))],
        ])
    }

    @Test func paletteIndexPicksTheNearestEntry() {
        typealias RGB = PictureRenderer.RGB
        #expect(PictureRenderer.paletteIndex(RGB(r: 255, g: 0, b: 0)) == 196)
        #expect(PictureRenderer.paletteIndex(RGB(r: 95, g: 135, b: 175)) == 67)
        #expect(PictureRenderer.paletteIndex(RGB(r: 128, g: 128, b: 128)) == 244)
        #expect(PictureRenderer.paletteIndex(RGB(r: 8, g: 8, b: 8)) == 232)
        #expect(PictureRenderer.paletteIndex(RGB(r: 238, g: 238, b: 238)) == 255)
        #expect(PictureRenderer.paletteIndex(RGB(r: 250, g: 250, b: 250)) == 231)
        #expect(PictureRenderer.paletteIndex(RGB(r: 100, g: 140, b: 170)) == 67)
    }

    @Test func shadesFollowBrightnessWithoutColour() {
        let picture = image([[white, black, red, gray], [white, black, white, gray]])
        let cells = PictureRenderer.render(picture, columns: 4, lines: 1, capability: .shades)
        #expect(cells.map { String($0.map(\.character)) } == ["█ ▓▒"])
        #expect(cells.joined().allSatisfy { $0.foreground == .terminalDefault && $0.background == .terminalDefault })
    }

    @Test func anOddLastPixelRowLeavesTheBottomHalfEmpty() {
        let picture = image([[red], [green], [blue]])
        let cells = PictureRenderer.render(picture, columns: 1, lines: 2, capability: .trueColor)
        #expect(cells.count == 2)
        #expect(cells.last == [PictureCell(Self.half, foreground: .trueColor(r: 0, g: 0, b: 255),
                                           background: .terminalDefault)])
    }

    // MARK: scaling

    @Test func aspectIsKeptWhenFitting() {
        #expect(PictureRenderer.fittedSize(width: 100, height: 50, columns: 40, lines: 40) == (40, 20))
        #expect(PictureRenderer.fittedSize(width: 30, height: 100, columns: 40, lines: 40) == (24, 80))
        #expect(PictureRenderer.fittedSize(width: 4_000, height: 3_000, columns: 80, lines: 22) == (59, 44))
        #expect(PictureRenderer.fittedSize(width: 4_000, height: 3_000, columns: 0, lines: 22) == (0, 0))
        let wide = PictureRenderer.render(solid(100, 50, red), columns: 40, lines: 40, capability: .trueColor)
        #expect(wide.count == 10 && wide.allSatisfy { $0.count == 40 })
        let tall = PictureRenderer.render(solid(30, 100, red), columns: 40, lines: 40, capability: .trueColor)
        #expect(tall.count == 40 && tall.allSatisfy { $0.count == 24 })
    }

    @Test func shrinkingAveragesAndEnlargingRepeats() {
        let stripes = image(Array(repeating: [black, white, black, white], count: 4))
        let shrunk = PictureRenderer.render(stripes, columns: 2, lines: 1, capability: .trueColor)
        #expect(shrunk == [Array(repeating: PictureCell(Self.half, foreground: .trueColor(r: 128, g: 128, b: 128),
                                                        background: .trueColor(r: 128, g: 128, b: 128)), count: 2)])
        let pair = image([[red, blue]])
        let grown = PictureRenderer.render(pair, columns: 4, lines: 4, capability: .palette256)
        #expect(grown.map { $0.map(\.foreground) } == [[.palette256(196), .palette256(196), .palette256(21),
                                                         .palette256(21)]])
    }

    @Test func noRoomGivesNoCells() {
        #expect(PictureRenderer.render(twoByFour, columns: 0, lines: 5, capability: .trueColor).isEmpty)
        #expect(PictureRenderer.render(twoByFour, columns: 5, lines: 0, capability: .shades).isEmpty)
    }

    @Test func aLargePictureScalesDownToTheArea() {
        let big = gradient(2_000, 150)
        let cells = PictureRenderer.render(big, columns: 80, lines: 24, capability: .trueColor)
        #expect(cells.count == 3 && cells[0].count == 80)
        // Left is dark in red, right is bright: the gradient survives the averaging.
        guard case .trueColor(let left, _, _) = cells[1][0].foreground,
              case .trueColor(let right, _, _) = cells[1][79].foreground
        else { Issue.record("not true colour"); return }
        #expect(left < 10 && right > 245)
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
        #expect(cells.allSatisfy { $0.character == Self.half })
        #expect(close(cells[0].foreground, to: (255, 255, 0)), "yellow top left: \(cells[0].foreground)")
        #expect(close(cells[0].background, to: (255, 255, 255)), "white bottom left: \(cells[0].background)")
        #expect(close(cells[1].foreground, to: (0, 0, 255)), "blue top right: \(cells[1].foreground)")
        #expect(close(cells[1].background, to: (0, 0, 0)), "black bottom right: \(cells[1].background)")

        let palette = PictureView.render(path: path, width: 2, height: 1, capability: .palette256)
        #expect(palette.rows == [[PictureCell(Self.half, foreground: .palette256(226), background: .palette256(231)),
                                  PictureCell(Self.half, foreground: .palette256(21), background: .palette256(16))]])

        let shades = PictureView.render(path: path, width: 2, height: 1, capability: .shades)
        #expect(shades.rows.map { String($0.map(\.character)) } == ["█ "])
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
        let decoded = try JPEGImage(path: path)
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
                let outcome = (try? JPEGImage(bytes: damaged)).map {
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

    @Test func capabilityDetection() {
        #expect(ColorCapability.detect(colors: 256, environment: ["COLORTERM": "truecolor"]) == .trueColor)
        #expect(ColorCapability.detect(colors: 16_777_216, environment: [:]) == .trueColor)
        #expect(ColorCapability.detect(colors: 256, environment: ["COLORTERM": "yes"]) == .palette256)
        #expect(ColorCapability.detect(colors: 8, environment: [:]) == .shades)
        #expect(ColorCapability.detect(colors: 0, environment: ["COLORTERM": "truecolor"]) == .shades)
    }
}

