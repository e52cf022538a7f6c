/// What colours the terminal can show, best first.
package enum ColorCapability: Sendable, Equatable, CaseIterable {
    /// 24-bit colour (`COLORTERM=truecolor` or `24bit`).
    case trueColor
    /// The xterm 256-colour palette: the 6×6×6 cube and the grayscale ramp.
    case palette256
    /// No usable colour: brightness as shade characters " ░▒▓█" in the terminal's own colours.
    case shades

    /// Picks the capability from the number of colours curses reports and the environment.
    package static func detect(colors: Int, environment: [String: String]) -> ColorCapability {
        let colorTerm = environment["COLORTERM"]?.lowercased() ?? ""
        if colors >= 1 << 24 || ((colorTerm == "truecolor" || colorTerm == "24bit") && colors >= 8) {
            return .trueColor
        }
        return colors >= 256 ? .palette256 : .shades
    }
}

/// One colour of a picture cell.
package enum PictureColor: Sendable, Equatable, Hashable {
    case trueColor(r: UInt8, g: UInt8, b: UInt8)
    /// An index into the xterm 256-colour palette (16...255 here: the cube and the grayscale ramp).
    case palette256(UInt8)
    /// The terminal's own foreground or background.
    case terminalDefault
}

/// One terminal cell of a picture: a character drawn in `foreground` on `background`.
package struct PictureCell: Sendable, Equatable, Hashable {
    package var character: Character
    package var foreground: PictureColor
    package var background: PictureColor

    package init(_ character: Character, foreground: PictureColor, background: PictureColor) {
        self.character = character
        self.foreground = foreground
        self.background = background
    }
}

/// Turns an `RGBImage` into terminal cells, two pixel rows per cell.
///
/// With colour, each cell is the upper half block "▀": its foreground is the top pixel, its background the bottom
/// one. A terminal cell is about twice as tall as wide, so each half is about square and the picture keeps its
/// aspect ratio when one pixel maps to one column and one half row. Without colour, each cell is the shade
/// character (" ░▒▓█") for the brightness of its two pixels.
package enum PictureRenderer {
    /// The upper half block, U+2580.
    package static let upperHalfBlock: Character = "\u{2580}"
    /// From dark to bright.
    package static let shadeCharacters: [Character] = [" ", "░", "▒", "▓", "█"]

    /// The largest pixel size that fits `columns` × `lines` cells (so `columns` × `2 * lines` pixels) with the
    /// image's aspect ratio, scaling up or down; (0, 0) when there is no room.
    package static func fittedSize(width: Int, height: Int, columns: Int, lines: Int) -> (width: Int, height: Int) {
        guard width > 0, height > 0, columns > 0, lines > 0 else { return (0, 0) }
        let scale = min(Double(columns) / Double(width), Double(2 * lines) / Double(height))
        let fittedWidth = min(columns, max(1, Int((Double(width) * scale).rounded())))
        let fittedHeight = min(2 * lines, max(1, Int((Double(height) * scale).rounded())))
        return (fittedWidth, fittedHeight)
    }

    /// The image scaled to fit `columns` × `lines` cells, aspect kept: `(height + 1) / 2` rows of `width` cells for
    /// the fitted pixel size. An odd last pixel row leaves the bottom halves of the last cells in the terminal's
    /// background.
    package static func render(_ image: RGBImage, columns: Int, lines: Int, capability: ColorCapability)
        -> [[PictureCell]]
    {
        let size = fittedSize(width: image.width, height: image.height, columns: columns, lines: lines)
        guard size.width > 0 else { return [] }
        let scaled = scale(image, toWidth: size.width, height: size.height)
        return stride(from: 0, to: size.height, by: 2).map { y in
            (0..<size.width).map { x in
                let top = scaled[y * size.width + x]
                let bottom = y + 1 < size.height ? scaled[(y + 1) * size.width + x] : nil
                return cell(top: top, bottom: bottom, capability: capability)
            }
        }
    }

    /// The cell for two vertically adjacent pixels (`bottom` nil below the last row).
    static func cell(top: RGB, bottom: RGB?, capability: ColorCapability) -> PictureCell {
        switch capability {
        case .trueColor:
            return PictureCell(upperHalfBlock, foreground: .trueColor(r: top.r, g: top.g, b: top.b),
                               background: bottom.map { .trueColor(r: $0.r, g: $0.g, b: $0.b) } ?? .terminalDefault)
        case .palette256:
            return PictureCell(upperHalfBlock, foreground: .palette256(paletteIndex(top)),
                               background: bottom.map { .palette256(paletteIndex($0)) } ?? .terminalDefault)
        case .shades:
            // Below the last row only the top pixel counts, at half weight: half the cell is empty.
            let brightness = (luminance(top) + (bottom.map(luminance) ?? 0)) / 2
            let index = min(shadeCharacters.count - 1, Int(brightness * Double(shadeCharacters.count) / 256))
            return PictureCell(shadeCharacters[index], foreground: .terminalDefault, background: .terminalDefault)
        }
    }

    /// One pixel's colour.
    struct RGB: Equatable {
        var r: UInt8
        var g: UInt8
        var b: UInt8
    }

    /// Rec. 601 luma, 0...255.
    static func luminance(_ pixel: RGB) -> Double {
        0.299 * Double(pixel.r) + 0.587 * Double(pixel.g) + 0.114 * Double(pixel.b)
    }

    /// The channel levels of the 6×6×6 colour cube (indices 16...231).
    private static let cubeLevels: [Int] = [0, 95, 135, 175, 215, 255]

    /// The nearest xterm palette entry: the closest cube colour or the closest of the 24 grays (232...255,
    /// levels 8, 18, ..., 238), whichever is nearer.
    static func paletteIndex(_ pixel: RGB) -> UInt8 {
        let channels = [Int(pixel.r), Int(pixel.g), Int(pixel.b)]
        let cube = channels.map { value in
            cubeLevels.indices.min { abs(cubeLevels[$0] - value) < abs(cubeLevels[$1] - value) }!
        }
        let cubeDistance = zip(channels, cube).reduce(0) { $0 + square($1.0 - cubeLevels[$1.1]) }
        let average = channels.reduce(0, +) / 3
        let gray = min(23, max(0, (average - 8 + 5) / 10))
        let grayDistance = channels.reduce(0) { $0 + square($1 - (8 + 10 * gray)) }
        if grayDistance < cubeDistance { return UInt8(232 + gray) }
        return UInt8(16 + 36 * cube[0] + 6 * cube[1] + cube[2])
    }

    private static func square(_ value: Int) -> Int { value * value }

    /// At most this many samples per axis are averaged for one output pixel when shrinking.
    static let samplesPerAxis = 8

    /// Resamples to `width` × `height`: each output pixel is the average of (up to 8×8 samples spread over) the
    /// source pixels it covers; when enlarging, the one source pixel under it.
    static func scale(_ image: RGBImage, toWidth width: Int, height: Int) -> [RGB] {
        let columns = (0..<width).map { span($0, of: width, over: image.width) }
        var result: [RGB] = []
        result.reserveCapacity(width * height)
        image.pixels.withUnsafeBufferPointer { pixels in
            for y in 0..<height {
                let rows = span(y, of: height, over: image.height)
                for x in 0..<width {
                    let cols = columns[x]
                    var r = 0, g = 0, b = 0, n = 0
                    for sy in rows {
                        let rowStart = sy * image.width
                        for sx in cols {
                            let i = (rowStart + sx) * 3
                            r += Int(pixels[i])
                            g += Int(pixels[i + 1])
                            b += Int(pixels[i + 2])
                            n += 1
                        }
                    }
                    result.append(RGB(r: UInt8((r + n / 2) / n), g: UInt8((g + n / 2) / n), b: UInt8((b + n / 2) / n)))
                }
            }
        }
        return result
    }

    /// The source indices sampled for output index `index` of `count` over a source of `sourceCount`.
    private static func span(_ index: Int, of count: Int, over sourceCount: Int) -> StrideTo<Int> {
        let first = index * sourceCount / count
        let end = max(first + 1, (index + 1) * sourceCount / count)
        let step = max(1, (end - first + samplesPerAxis - 1) / samplesPerAxis)
        return stride(from: first, to: end, by: step)
    }
}
