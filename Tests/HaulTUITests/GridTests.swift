import Testing
@testable import HaulTUI

/// Cells, widths and truncation: the ground the layout stands on.
@Suite struct GridTests {
    @Test func widths() {
        #expect(DisplayWidth.of("abc") == 3)
        #expect(DisplayWidth.of("写真") == 4)
        #expect(DisplayWidth.of("🎉") == 2)
        #expect(DisplayWidth.of("cafe\u{301}") == 4, "a combining accent takes no column")
        #expect(DisplayWidth.of("a\u{200B}b") == 2, "a zero-width space takes none")
        #expect(DisplayWidth.of("한국어") == 6)
        #expect(DisplayWidth.of("ｆｕｌｌ") == 8, "fullwidth Latin")
        #expect(DisplayWidth.of("👨‍👩‍👧") == 2, "a family emoji is drawn as its first person")
        #expect(DisplayWidth.printable("👨‍👩‍👧") == "👨")
        #expect(DisplayWidth.printable("\u{7}") == "?")
        #expect(DisplayWidth.printable("\u{1B}") == "?")
        #expect(DisplayWidth.printable("\u{202E}") == nil, "bidi overrides are dropped")
    }

    @Test func putClipsAtTheLimitAndTheEdge() {
        var grid = Grid(Size(columns: 6, rows: 1))
        #expect(grid.put("abcdef", x: 0, y: 0, limit: 4) == 4)
        #expect(grid.lines == ["abcd"])
        #expect(grid.put("xyz", x: 4, y: 0) == 2)
        #expect(grid.lines == ["abcdxy"])
        #expect(grid.put("q", x: 0, y: 3) == 0, "rows outside are ignored")
        grid.put("qr", x: -1, y: 0)
        #expect(grid.lines == ["rbcdxy"], "columns left of the grid are skipped")
    }

    @Test func aWideCharacterTakesTwoCells() {
        var grid = Grid(Size(columns: 5, rows: 1))
        grid.put("a写b", x: 0, y: 0)
        #expect(grid.lines == ["a写b"])
        #expect(grid[1, 0].width == 2)
        #expect(grid[2, 0].isContinuation)
        #expect(grid[3, 0].text == "b")
    }

    @Test func aWideCharacterThatDoesNotFitBecomesASpace() {
        var grid = Grid(Size(columns: 3, rows: 1))
        #expect(grid.put("ab写", x: 0, y: 0) == 3)
        #expect(grid.lines == ["ab"])
        #expect(grid[2, 0].width == 1)
    }

    @Test func overwritingHalfAWideCharacterClearsTheOtherHalf() {
        var grid = Grid(Size(columns: 4, rows: 1))
        grid.put("写真", x: 0, y: 0)
        grid.put("x", x: 1, y: 0)
        #expect(grid.lines == [" x真"])
        grid.put("y", x: 2, y: 0)
        #expect(grid.lines == [" xy"])
        #expect((0..<4).allSatisfy { grid[$0, 0].width == 1 })
        grid.put("写", x: 1, y: 0)
        #expect(grid.lines == [" 写"])
        #expect(grid[3, 0].width == 1)
    }

    @Test func truncation() {
        #expect(Text.truncated("hello world", to: 8) == "hello w…")
        #expect(Text.truncated("hello", to: 5) == "hello")
        #expect(Text.truncated("hello", to: 1) == "h")
        #expect(Text.truncated("写真写真", to: 5) == "写真…")
        #expect(Text.truncated("写真写真", to: 4) == "写…")
        #expect(Text.truncatedMiddle("a-long-file-name-here.tar.gz", to: 16) == "a-long-fil…ar.gz")
        #expect(DisplayWidth.of(Text.truncatedMiddle("東京タワー夜景東京タワー夜景.jpg", to: 15)) <= 15)
        #expect(Text.right("写", 4) == "  写")
        #expect(Text.left("写", 4) == "写  ")
    }

    @Test func progressBarInEighths() {
        var grid = Grid(Size(columns: 4, rows: 1))
        func bar(_ fraction: Double?, _ glyphs: Glyphs) -> [String] {
            grid.draw(in: Rect.row(0, width: 4)) {
                ProgressBar.draw(fraction, x: 0, y: 0, width: 4, style: .plain, glyphs: glyphs, into: &$0)
            }
            return grid.lines
        }
        #expect(bar(0.5, .unicode) == ["██░░"])
        #expect(bar(0.3, .unicode) == ["█▏░░"])
        #expect(bar(1, .ascii) == ["####"])
        #expect(bar(nil, .ascii) == ["----"])
        #expect(bar(.nan, .ascii) == ["----"])
    }

    @Test func aCanvasDrawsInItsAreaOnly() {
        var grid = Grid(Size(columns: 10, rows: 3))
        grid.draw(in: Rect(x: 2, y: 1, width: 4, height: 1)) { canvas in
            #expect(canvas.size == Size(columns: 4, rows: 1))
            canvas.put("abcdefgh", x: 0, y: 0)
            canvas.put("zz", x: 0, y: 1)  // below the area: dropped
            canvas.fill("#", x: -3, y: 0, count: 4)  // left of the area: clipped to its first column
            canvas.restyle(x: 3, y: 0, count: 10) { $0.bold = true }
        }
        #expect(grid.lines == ["", "  #bcd", ""])
        #expect(grid[5, 1].style.bold && !grid[6, 1].style.bold && !grid[4, 1].style.bold)
        // An area partly off the screen is clipped to it.
        grid.draw(in: Rect(x: 8, y: 2, width: 5, height: 5)) { canvas in
            #expect(canvas.size == Size(columns: 2, rows: 1))
            canvas.put("xyz", x: 0, y: 0)
        }
        #expect(grid.lines[2] == "        xy")
    }

    @Test func layoutShrinksToTheScreen() {
        func parts(_ columns: Int, _ rows: Int, _ view: AppState.View) -> [Int?] {
            let layout = Layout(size: Size(columns: columns, rows: rows), view: view)
            return [layout.header?.y, layout.status?.y, layout.headings?.y, layout.list.y, layout.list.height, layout.footer?.y]
        }
        #expect(parts(20, 5, .downloads) == [0, nil, 1, 2, 2, 4])
        #expect(parts(20, 6, .files) == [0, 1, 2, 3, 2, 5])
        #expect(parts(20, 2, .files) == [0, nil, nil, 1, 0, 1])
        #expect(parts(0, 0, .downloads) == [nil, nil, nil, 0, 0, nil])
    }
}
