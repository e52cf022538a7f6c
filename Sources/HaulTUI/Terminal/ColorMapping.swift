/// Colour numbers for curses: a `Color` becomes the nearest colour a terminal with `count` colours has.
enum ColorMapping {
    /// The curses colour number of `color` on a terminal with `count` colours (8, 16, 88, 256, ...).
    static func number(_ color: Color, colors count: Int) -> Int16 {
        switch color {
        case .black: 0
        case .red: 1
        case .green: 2
        case .yellow: 3
        case .blue: 4
        case .magenta: 5
        case .cyan: 6
        case .white: 7
        case .palette(let index):
            Int(index) < count ? Int16(index) : basic(rgb(ofPalette: index))
        case .rgb(let r, let g, let b):
            count >= 256 ? Int16(paletteIndex(r, g, b)) : basic((r, g, b))
        }
    }

    /// The xterm 256-colour index nearest to an RGB colour: the 6x6x6 cube or the grey ramp.
    static func paletteIndex(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> UInt8 {
        func level(_ v: UInt8) -> Int { v < 48 ? 0 : (v < 115 ? 1 : (Int(v) - 35) / 40) }
        let (cr, cg, cb) = (level(r), level(g), level(b))
        let cube = 16 + 36 * cr + 6 * cg + cb
        let average = (Int(r) + Int(g) + Int(b)) / 3
        let grey = average > 238 ? 23 : max(0, (average - 3) / 10)
        let greyValue = 8 + 10 * grey
        let steps = [0, 95, 135, 175, 215, 255]
        func distance(_ x: (Int, Int, Int)) -> Int {
            let d = (x.0 - Int(r), x.1 - Int(g), x.2 - Int(b))
            return d.0 * d.0 + d.1 * d.1 + d.2 * d.2
        }
        let cubeDistance = distance((steps[cr], steps[cg], steps[cb]))
        let greyDistance = distance((greyValue, greyValue, greyValue))
        return UInt8(greyDistance < cubeDistance ? 232 + grey : cube)
    }

    /// The RGB value of a palette index (16...255; the first 16 are taken as the basic colours).
    static func rgb(ofPalette index: UInt8) -> (UInt8, UInt8, UInt8) {
        let i = Int(index)
        if i < 16 {
            let on: UInt8 = i < 8 ? 128 : 255
            return (i & 1 != 0 ? on : 0, i & 2 != 0 ? on : 0, i & 4 != 0 ? on : 0)
        }
        if i >= 232 {
            let v = UInt8(8 + 10 * (i - 232))
            return (v, v, v)
        }
        let steps: [UInt8] = [0, 95, 135, 175, 215, 255]
        let c = i - 16
        return (steps[c / 36], steps[(c / 6) % 6], steps[c % 6])
    }

    /// The nearest of the eight basic colours.
    static func basic(_ rgb: (UInt8, UInt8, UInt8)) -> Int16 {
        let (r, g, b) = (Int(rgb.0), Int(rgb.1), Int(rgb.2))
        let brightest = max(r, g, b)
        guard brightest >= 64 else { return 0 }
        let threshold = brightest / 2
        return Int16((r > threshold ? 1 : 0) | (g > threshold ? 2 : 0) | (b > threshold ? 4 : 0))
    }
}
