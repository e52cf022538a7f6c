import HaulCore
import Testing
@testable import HaulTUI

/// Text from servers, URLs and input files reaches cells; no control or invisible format character may.
@Suite struct HostileTextTests {
    /// ESC sequences (OSC title, CSI clear), BEL, a C1 CSI, DEL, bidi controls and marks, a tab, CR LF.
    static let hostile = "a\u{1b}]0;pwned\u{07}b\u{1b}[2J\u{9b}31m\u{7f}\u{202E}cba\u{200F}\u{2066}\u{61C}\t\r\nz"

    static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
            || scalar.properties.generalCategory == .format
            || scalar.properties.generalCategory == .lineSeparator
            || scalar.properties.generalCategory == .paragraphSeparator
    }

    static func unsafeCells(_ grid: Grid) -> [String] {
        var found: [String] = []
        for y in 0..<grid.height {
            for x in 0..<grid.width where grid[x, y].text.unicodeScalars.contains(where: isUnsafe) {
                found.append("(\(x), \(y)): \(grid[x, y].text.debugDescription)")
            }
        }
        return found
    }

    @Test func hostileNamesURLsAndErrorsNeverPutAControlCharacterInACell() {
        var row = Fixtures.row(1, "name" + Self.hostile + ".bin", .failed(HaulError(.server, "bad" + Self.hostile)))
        row.url = "http://h/" + Self.hostile
        row.path = "out/" + Self.hostile
        var state = Fixtures.state(Size(columns: 100, rows: 12), rows: [row, Fixtures.row(2, Self.hostile, .queued)])
        #expect(Self.unsafeCells(render(state, size: state.size)) == [])
        state.overlay = .details(1)
        #expect(Self.unsafeCells(render(state, size: state.size)) == [])
        state.overlay = .prompt(Self.hostile)
        #expect(Self.unsafeCells(render(state, size: state.size)) == [])
        state.overlay = nil
        state.message = Self.hostile
        #expect(Self.unsafeCells(render(state, size: state.size)) == [])
    }

    @Test func aGridNeverHoldsAControlCharacterWhateverItIsGiven() {
        var grid = Grid(Size(columns: 60, rows: 3))
        grid.put(Self.hostile, x: 0, y: 0)
        grid.fill("\u{1b}", x: 0, y: 1, count: 5)
        grid.fill("\u{202E}", x: 5, y: 1, count: 5)
        #expect(Self.unsafeCells(grid) == [])
        // Visible stand-ins, so a hostile name still looks odd instead of vanishing.
        #expect(grid.lines[0].hasPrefix("a?]0;pwned?b?[2J?31m?"))
    }
}
