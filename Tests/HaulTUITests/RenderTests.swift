import HaulCore
import Testing
@testable import HaulTUI

/// `render` read back as text lines: what a user sees, without a terminal.
@Suite struct RenderTests {
    static var wideNames: AppState {
        var state = Fixtures.state(Size(columns: 80, rows: 8), rows: [
            Fixtures.row(1, "a-very-long-file-name-that-does-not-fit-anywhere-at-all-really-not.tar.gz", .downloading,
                         completed: 1 << 20, speed: 1_048_576),
            Fixtures.row(2, "写真-東京タワー-夜景-とても長い名前のファイル.jpg", .downloading, completed: 2 << 20, speed: 1_048_576),
            Fixtures.row(3, "🎉party🎉.bin", .done, completed: 20 << 20),
            Fixtures.row(4, "cafe\u{301}-bad\u{7}name.txt", .queued),
        ])
        state.selection = 1
        return state
    }

    private func lines(_ state: AppState) -> [String] {
        render(state, size: state.size).lines
    }

    @Test func emptyList() {
        #expect(lines(Fixtures.state(Size(columns: 80, rows: 8))) == [
            " haul │ Downloads                              elapsed 0:00  0 B/s  0 of 0 done",
            " NAME                PROGRESS            %     DONE / TOTAL STATE",
            "  No downloads yet.",
            "  Press a to add a URL.",
            "",
            "",
            "",
            " ? help  q quit  c cancel  C cancel all  p pause  a add  Tab files  r retry",
        ])
    }

    @Test func mixedStatesOnAWideScreen() {
        #expect(lines(Fixtures.mixed(Size(columns: 120, rows: 13))) == [
            " haul │ Downloads                                                                 elapsed 0:42  13.8 MiB/s  1 of 9 done",
            " NAME                     PROGRESS                %          DONE / TOTAL       SPEED     ETA STATE",
            "›medium.bin               █████████▊░░░░░░░░░░  48%   9.75 MiB / 20.0 MiB  9.75 MiB/s    0:01 downloading",
            " small.bin                ░░░░░░░░░░░░░░░░░░░░   --               0 B / ?                     queued",
            " huge.bin                 ░░░░░░░░░░░░░░░░░░░░   --               0 B / ?                     connecting",
            " notes.txt                █████░░░░░░░░░░░░░░░  25%   5.00 MiB / 20.0 MiB                     paused",
            " done.iso                 ████████████████████ 100%   20.0 MiB / 20.0 MiB                     done",
            " missing.bin              ░░░░░░░░░░░░░░░░░░░░   0%        0 B / 20.0 MiB                     failed: server answered 4…",
            " stopped.bin              █░░░░░░░░░░░░░░░░░░░   5%   1.00 MiB / 20.0 MiB                     cancelled",
            " photo-large.jpg          ██████████░░░░░░░░░░  50%   3.00 MiB / 6.00 MiB                     cancelled, partial previe…",
            " large.bin                █████░░░░░░░░░░░░░░░  25%    50.0 MiB / 200 MiB  4.00 MiB/s    0:38 cancelling",
            "",
            " ? help  q quit  c cancel  C cancel all  p pause  a add  Tab files  r retry  d remove  Enter details  ↑↓ select",
        ])
    }

    @Test func mixedStatesOnAnEightyColumnScreen() {
        #expect(lines(Fixtures.mixed(Size(columns: 80, rows: 13))) == [
            " haul │ Downloads                         elapsed 0:42  13.8 MiB/s  1 of 9 done",
            " NAME                PROGRESS            %     DONE / TOTAL STATE",
            "›medium.bin          ███████▊░░░░░░░░  48%    9.75/20.0 MiB 9.75 MiB/s 0:01 left",
            " small.bin           ░░░░░░░░░░░░░░░░   --            0 B/? queued",
            " huge.bin            ░░░░░░░░░░░░░░░░   --            0 B/? connecting",
            " notes.txt           ████░░░░░░░░░░░░  25%    5.00/20.0 MiB paused",
            " done.iso            ████████████████ 100%    20.0/20.0 MiB done",
            " missing.bin         ░░░░░░░░░░░░░░░░   0%     0 B/20.0 MiB failed: server answ…",
            " stopped.bin         ▊░░░░░░░░░░░░░░░   5%    1.00/20.0 MiB cancelled",
            " photo-large.jpg     ████████░░░░░░░░  50%    3.00/6.00 MiB cancelled, partial …",
            " large.bin           ████░░░░░░░░░░░░  25%     50.0/200 MiB cancelling",
            "",
            " ? help  q quit  c cancel  C cancel all  p pause  a add  Tab files  r retry",
        ])
    }

    @Test func longAndWideNames() {
        let state = Self.wideNames
        #expect(lines(state) == [
            " haul │ Downloads                         elapsed 0:00  2.00 MiB/s  1 of 4 done",
            " NAME                PROGRESS            %     DONE / TOTAL STATE",
            " a-very-long-…tar.gz ▊░░░░░░░░░░░░░░░   5%    1.00/20.0 MiB 1.00 MiB/s 0:19 left",
            "›写真-東京タ…ル.jpg  █▌░░░░░░░░░░░░░░  10%    2.00/20.0 MiB 1.00 MiB/s 0:18 left",
            " 🎉party🎉.bin       ████████████████ 100%    20.0/20.0 MiB done",
            " café-bad?name.txt   ░░░░░░░░░░░░░░░░   0%     0 B/20.0 MiB queued",
            "",
            " ? help  q quit  c cancel  C cancel all  p pause  a add  Tab files  r retry",
        ])
        // Every row is exactly as wide as the screen, wide characters counted twice.
        let grid = render(state, size: state.size)
        for y in 2..<6 {
            let columns = (0..<grid.width).reduce(0) { $0 + Int(grid[$1, y].width) }
            #expect(columns == 80, "row \(y)")
        }
    }

    @Test func tinyTwentyByFive() {
        #expect(lines(Fixtures.mixed(Size(columns: 20, rows: 5))) == [
            "  0:42  1 of 9 done",
            " NAME       % STATE",
            "›medium…  48% 9.75 …",
            " small.…   -- queued",
            " ? help  q quit",
        ])
    }

    @Test func largeTwoHundredBySixty() {
        let size = Size(columns: 200, rows: 60)
        let grid = render(Fixtures.mixed(size), size: size)
        let text = grid.lines
        #expect(text.count == 60)
        #expect(text[0].hasPrefix(" haul │ Downloads "))
        #expect(text[0].hasSuffix("elapsed 0:42  13.8 MiB/s  1 of 9 done"))
        #expect(DisplayWidth.of(text[0]) == 199)
        #expect(text[1].hasPrefix(" NAME "))
        #expect(text[1].hasSuffix("%          DONE / TOTAL       SPEED     ETA STATE"))
        #expect(text[2].hasSuffix(" 48%   9.75 MiB / 20.0 MiB  9.75 MiB/s    0:01 downloading"))
        #expect(text[7].hasSuffix("failed: server answered 404 Not Found"), "a wide screen has room for the reason")
        #expect(text[9].hasSuffix("cancelled, partial preview saved"))
        #expect(text[10].hasSuffix("4.00 MiB/s    0:38 cancelling"))
        #expect(text[11..<59].allSatisfy { $0.isEmpty })
        #expect(text[59] == " ? help  q quit  c cancel  C cancel all  p pause  a add  Tab files  r retry  d remove  Enter details  ↑↓ select")
        // The bar is capped at 50 columns; the name keeps its column aligned on every row.
        let barStarts = (2...10).map { y in (0..<200).first { ["█", "░", "▍", "▌"].contains(grid[$0, y].text) } }
        #expect(Set(barStarts).count == 1)
    }

    @Test func helpOverlay() {
        var state = Fixtures.mixed(Size(columns: 80, rows: 27))
        state.overlay = .help
        #expect(lines(state) == [
            " haul │┌─ Keys ─────────────────────────────────────────────────────────┐9 done",
            " NAME  │ Downloads view                                                 │",
            "›medium│   Enter     details of the selected download                   │01 left",
            " small.│   c         cancel the selected download (.part kept)          │",
            " huge.b│   p Space P pause / resume the selected download / all         │",
            " notes.│   r         retry a failed or cancelled download               │",
            " done.i│   u         new address for a paused or failed download        │",
            " missin│   d Delete  remove a finished row (files stay)                 │r answ…",
            " stoppe│   D         delete the selected download's files (asks first)  │",
            " photo-│   K J T B   move in the queue: up / down / to the top / bottom │rtial …",
            " large.│   s         sort: queue, added, finished, name, size, %, speed │",
            "       │   /         filter by name (Enter keeps it, Esc clears it)     │",
            "       │   v         show the selected JPEG (live while it downloads)   │",
            "       │   o O       open the finished file / its folder (xdg-open)     │",
            "       │ Files view                                                     │",
            "       │   Enter     download the selected file, 1 connection           │",
            "       │   m         download it in 4 parts at once                     │",
            "       │   r         reload the list                                    │",
            "       │ Everywhere                                                     │",
            "       │   ↑↓ k j    select (PgUp PgDn Home End, g G too)               │",
            "       │   C         Cancel All: every download and the clock           │",
            "       │   a         add a URL                                          │",
            "       │   Tab ?     switch between downloads and files / this help     │",
            "       │   + -       raise / lower the rate cap (in details: its own)   │",
            "       │   q         quit; while downloads run, asks, then pauses them  │",
            "       └────────────────────────────────────────────────────────────────┘",
            " Esc close help",
        ])
    }

    @Test func filesView() {
        #expect(lines(Fixtures.files(Size(columns: 100, rows: 9))) == [
            " haul │ Files                                                 elapsed 0:03  9.75 MiB/s  0 of 1 done",
            " SuperStorage sample server: 4 files, 1.31 GB, rate 4.19 MB/s per connection",
            " NAME                                      SIZE DATE             DOWNLOAD",
            " huge.bin                              1.00 GiB 2025-01-31 12:00",
            " large.bin                              200 MiB 2025-01-31 12:00",
            "›medium.bin                            20.0 MiB 2025-01-31 12:00 ████████▎░░░░░░░░ 48% downloading",
            " small.bin                             1.00 MiB 2025-01-31 12:00",
            "",
            " ? help  q quit  Enter download  m multi-part  C cancel all  a add  Tab downloads  r reload",
        ])
    }

    @Test func readableWithoutUnicode() {
        var state = Fixtures.mixed(Size(columns: 80, rows: 6))
        state.unicode = false
        #expect(lines(state) == [
            " haul | Downloads                         elapsed 0:42  13.8 MiB/s  1 of 9 done",
            " NAME                PROGRESS            %     DONE / TOTAL STATE",
            ">medium.bin          #######---------  48%    9.75/20.0 MiB 9.75 MiB/s 0:01 left",
            " small.bin           ----------------   --            0 B/? queued",
            " huge.bin            ----------------   --            0 B/? connecting",
            " ? help  q quit  c cancel  C cancel all  p pause  a add  Tab files  r retry",
        ])
    }

    @Test func detailsOverlay() {
        var state = Fixtures.mixed(Size(columns: 80, rows: 12))
        state.overlay = .details(6)
        #expect(lines(state) == [
            " haul │ Downloads                         elapsed 0:42  13.8 MiB/s  1 of 9 done",
            " NAME                PROGRESS            %     DONE / TOTAL STATE",
            "┌─ Download 6 ─────────────────────────────────────────────────────────────────┐",
            "│ Name   missing.bin                                                           │",
            "│ URL    http://127.0.0.1:8080/files/download?missing.bin                      │",
            "│ File   downloads/missing.bin                                                 │",
            "│ State  failed: server answered 404 Not Found                                 │",
            "│ Bytes  0 B / 20.0 MiB (0%)                                                   │",
            "│ Limit  none                                                                  │",
            "└──────────────────────────────────────────────────────────────────────────────┘",
            " large.bin           ████░░░░░░░░░░░░  25%     50.0/200 MiB cancelling",
            " Esc close",
        ])
    }

    @Test func promptShowsTheEndOfALongURL() {
        var state = Fixtures.mixed(Size(columns: 60, rows: 7))
        state.overlay = .prompt("http://example.com/some/long/path/to/a/file/that/scrolls.iso")
        #expect(lines(state) == [
            " haul │ Downloads     elapsed 0:42  13.8 MiB/s  1 of 9 done",
            "┌─ Add a download ─────────────────────────────────────────┐",
            "│ URL, then Enter (Esc cancels):                           │",
            "│ > example.com/some/long/path/to/a/file/that/scrolls.iso_ │",
            "│                                                          │",
            "└──────────────────────────────────────────────────────────┘",
            " Enter download  Esc cancel",
        ])
    }

    @Test func confirmDetach() {
        var state = Fixtures.mixed(Size(columns: 60, rows: 9))
        state.attached = true
        state.overlay = .confirmDetach
        let screen = lines(state)
        #expect(screen[2].contains("─ Detach? ─"))
        #expect(screen[3].contains("3 downloads are running."))
        #expect(screen[4].contains("Keep them going in the background?"))
        #expect(screen[5].contains("Enter keep going   p pause   Esc stay"))
        #expect(screen[8].hasPrefix(" Enter keep going in the background  p pause them"))
        state.overlay = nil
        #expect(lines(state)[8].hasPrefix(" ? help  q detach  c cancel"))
    }

    @Test func confirmQuit() {
        var state = Fixtures.mixed(Size(columns: 60, rows: 9))
        state.overlay = .confirmQuit
        #expect(lines(state) == [
            " haul │ Downloads     elapsed 0:42  13.8 MiB/s  1 of 9 done",
            " NAME                PROGRESS             % STATE",
            "›medi┌─ Quit? ────────────────────────────────────────┐0:01…",
            " smal│ 3 downloads are running.                       │",
            " huge│ Quit and pause them? (resumable later)         │",
            " note│ y quit   n stay                                │",
            " done└────────────────────────────────────────────────┘",
            " missing.bin         ░░░░░░░░░░░░░░░░░   0% failed: server …",
            " y quit, pausing downloads  n stay",
        ])
    }

    @Test func colourIsNeverTheOnlySignal() {
        var state = Fixtures.mixed(Size(columns: 80, rows: 6))
        state.colors = false
        let grid = render(state, size: state.size)
        #expect(grid.lines == lines(Fixtures.mixed(Size(columns: 80, rows: 6))))
        #expect((0..<80).allSatisfy { grid[$0, 0].style.reverse }, "the header stands out in reverse video")
        #expect((0..<80).allSatisfy { grid[$0, 2].style.reverse }, "so does the selected row")
        #expect((0..<80).allSatisfy { grid[$0, 3].style.foreground == nil && grid[$0, 3].style.background == nil })
    }

    @Test func clockLooksRunningOnlyWhileItRuns() {
        var state = Fixtures.mixed(Size(columns: 80, rows: 6))
        let clockX = lines(state)[0].firstRange(of: "0:42").map { lines(state)[0].distance(from: lines(state)[0].startIndex, to: $0.lowerBound) }!
        // "│" before it is one column, like every character of this header.
        #expect(render(state, size: state.size)[clockX, 0].style.bold)
        state.clockRunning = false
        #expect(!render(state, size: state.size)[clockX, 0].style.bold)
    }

    @Test(arguments: [AppState.View.downloads, .files])
    func anySizeGivesASaneScreen(view: AppState.View) {
        let overlays: [AppState.Overlay?] = [nil, .help, .prompt("http://x/写真.jpg"), .confirmQuit, .details(2),
                                             .picture(path: "/tmp/p.jpg")]
        for overlay in overlays {
            for columns in [0, 1, 2, 3, 5, 8, 13, 20, 21, 33, 49, 50, 51, 72, 73, 79, 80, 110, 111, 131, 200, 333] {
                for rows in [0, 1, 2, 3, 4, 5, 6, 7, 12, 60] {
                    let size = Size(columns: columns, rows: rows)
                    var state = view == .files ? Fixtures.files(size) : Fixtures.mixed(size)
                    state.rows += RenderTests.wideNames.rows.map { row in
                        var copy = row
                        copy.id += 100
                        return copy
                    }
                    state.overlay = overlay
                    state.selection = state.rows.count - 1
                    let grid = render(state, size: size)
                    #expect(grid.lines.count == rows)
                    for (y, line) in grid.lines.enumerated() {
                        #expect(DisplayWidth.of(line) <= columns, "\(size) \(String(describing: overlay)) row \(y)")
                        let covered = (0..<columns).reduce(0) { $0 + Int(grid[$1, y].width) }
                        #expect(covered == columns, "no half of a wide character at \(size) row \(y)")
                    }
                }
            }
        }
    }

    @Test func theSelectionStaysVisibleInALongList() {
        var state = Fixtures.state(Size(columns: 60, rows: 6))
        state.rows = (1...50).map { Fixtures.row($0, "file-\($0).bin", .queued) }
        state.selection = 37
        let text = lines(state)
        #expect(text[2].hasPrefix(" file-36.bin"))
        #expect(text[4].hasPrefix("›file-38.bin"))
    }
}
