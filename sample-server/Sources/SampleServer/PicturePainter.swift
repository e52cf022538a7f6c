import Foundation

/// Paints a deterministic landscape (sky, sun, mountains, fields, trees) with a fine grain, as packed RGB.
///
/// Everything scales with the picture size, so every size shows the same scene. Rows are painted in parallel bands
/// with plain integer arithmetic on raw pointers (generic conversions and collection iterators are slow in debug
/// builds, where the tests run). The grain, a hash of the pixel position, is what makes the JPEGs big.
struct PicturePainter: Sendable {
    let width: Int
    let height: Int
    /// Amplitude of the grain, 0...127.
    let grain: Int

    private struct Tree: Sendable {
        let x: Int
        let y: Int
        let radius: Int
    }

    func paint() -> [UInt8] {
        let ridge = ridgeHeights()
        let trees = treePositions()
        let clamp = (0..<768).map { UInt8(Swift.min(255, Swift.max(0, $0 - 256))) }
        let bands = 8
        let rowsPerBand = (height + bands - 1) / bands
        return [UInt8](unsafeUninitializedCapacity: width * height * 3) { pixels, initialized in
            let base = SendablePointer(pixels.baseAddress!)
            ridge.withUnsafeBufferPointer { ridge in
                clamp.withUnsafeBufferPointer { clamp in
                    let ridge = SendablePointer(UnsafeMutablePointer(mutating: ridge.baseAddress!))
                    let clamp = SendablePointer(UnsafeMutablePointer(mutating: clamp.baseAddress!))
                    DispatchQueue.concurrentPerform(iterations: bands) { band in
                        var y = band * rowsPerBand
                        while y < Swift.min(height, (band + 1) * rowsPerBand) {
                            paintRow(y, into: base.pointer + y * width * 3, ridge: ridge.pointer, clamp: clamp.pointer, trees: trees)
                            y += 1
                        }
                    }
                }
            }
            initialized = width * height * 3
        }
    }

    private func paintRow(
        _ y: Int, into row: UnsafeMutablePointer<UInt8>, ridge: UnsafeMutablePointer<Int>,
        clamp: UnsafeMutablePointer<UInt8>, trees: [Tree]
    ) {
        let horizon = height * 62 / 100
        let sunX = width * 72 / 100
        let sunRadius2 = (Swift.min(width, height) / 12) * (Swift.min(width, height) / 12)
        let glowRadius2 = sunRadius2 * 9
        let skyT = Swift.min(255, y * 255 / Swift.max(1, horizon))
        let skyR = 30 + skyT * 200 / 255
        let skyG = 60 + skyT * 130 / 255
        let skyB = 160 + skyT * 40 / 255
        let fieldT = Swift.max(0, y - horizon) * 255 / Swift.max(1, height - horizon)
        let stripe = ((y - horizon) * 40 / Swift.max(1, height - horizon)) & 1
        let dy = y - height * 24 / 100
        let rowTrees = trees.filter { Swift.abs(y - $0.y) < $0.radius }
        let grain = self.grain
        let yHash = y &* 0x85EB_CA77
        var x = 0
        var out = row
        while x < width {
            var r: Int
            var g: Int
            var b: Int
            let top = ridge[x]
            if y < top {
                let dx = x - sunX
                let distance2 = dx * dx + dy * dy
                r = skyR
                g = skyG
                b = skyB
                if distance2 < sunRadius2 {
                    r = 255
                    g = 236
                    b = 170
                } else if distance2 < glowRadius2 {
                    let glow = 90 - 90 * distance2 / glowRadius2
                    r += glow
                    g += glow * 3 / 4
                }
            } else if y < horizon {
                let shade = (y - top) * 120 / (horizon - top + 1)
                r = 70 + shade / 3
                g = 80 + shade / 3
                b = 110 + shade / 4
                if (x / 7 + y / 5) % 11 == 0 {
                    r += 25
                    g += 25
                    b += 25
                }
            } else {
                r = 40 + fieldT / 4 + stripe * 18
                g = 110 + fieldT / 3 - stripe * 10
                b = 30 + fieldT / 8
            }
            if !rowTrees.isEmpty {
                for tree in rowTrees {
                    let tx = x - tree.x
                    let ty = y - tree.y
                    if tx * tx + ty * ty < tree.radius * tree.radius {
                        r = 20 + (tx & 15)
                        g = 70 + (ty & 31)
                        b = 25
                    }
                }
            }
            var hash = (x &* 0x9E37_79B1 ^ yHash) & 0xFFFF_FFFF
            hash ^= hash >> 15
            hash = (hash &* 0x2C1B_3C6D) & 0xFFFF_FFFF
            hash ^= hash >> 12
            let noise = (hash & 0xFF) * grain / 128 - grain + 256
            out[0] = clamp[r + noise]
            out[1] = clamp[g + noise]
            out[2] = clamp[b + noise]
            out += 3
            x += 1
        }
    }

    /// Top of the mountains for every column.
    private func ridgeHeights() -> [Int] {
        let horizon = height * 62 / 100
        let scale = Double(height)
        return (0..<width).map { x in
            let t = Double(x) / Double(Swift.max(1, width))
            let elevation = 0.16 * sin(t * 7.1 + 0.4) + 0.08 * sin(t * 17.3 + 1.9) + 0.03 * sin(t * 53.0) + 0.22
            return horizon - Int(elevation * scale * 0.55)
        }
    }

    private func treePositions() -> [Tree] {
        let horizon = height * 62 / 100
        return (0..<9).map { index in
            Tree(
                x: width * (7 + index * 11) / 100,
                y: horizon + (height - horizon) * (15 + (index * 37) % 60) / 100,
                radius: Swift.max(2, Swift.min(width, height) * (3 + index % 4) / 100))
        }
    }
}

/// A raw pointer handed to the painting bands, each of which writes its own disjoint rows.
private struct SendablePointer<Pointee>: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<Pointee>

    init(_ pointer: UnsafeMutablePointer<Pointee>) {
        self.pointer = pointer
    }
}
