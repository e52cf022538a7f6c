import Foundation
import HaulTUI
import SampleServer
import TestSupport
import Testing

/// `v` in the full screen where the terminal draws pictures itself: what reaches the terminal, byte for byte,
/// on a pseudo-terminal that reports its cells as 8 x 16 pixels.
@Suite struct TerminalPictureTests {
    static let escape = "\u{1b}"

    /// Each image protocol: the picture goes out in that protocol, between a cursor save and restore, at
    /// the cells the frame left blank and at the terminal's own cell size; Escape takes it away again (a
    /// kitty image is deleted, a sixel or iTerm2 one drawn over by a repaint of the whole screen).
    @Test(arguments: [PictureMode.kitty, .sixel, .iterm])
    func vSendsThePictureInTheTerminalsOwnProtocol(mode: PictureMode) async throws {
        try await Self.withThePhoto(mode: mode) { terminal in
        let start: String = switch mode {
        case .kitty: "\(Self.escape)_Ga=T"
        case .sixel: "\(Self.escape)P"
        default: "\(Self.escape)]1337;File="
        }
        let before = terminal.written.count
        try terminal.type("v")
        let restore = Array("\(Self.escape)8".utf8)
        let shown = try await terminal.waitFor("the picture") { bytes in
            // All of it: up to the cursor's restore (no ESC occurs inside the picture's data).
            bytes.range(of: Array(start.utf8), from: before).map { bytes.range(of: restore, from: $0.upperBound) != nil } ?? false
        }
        let image = try #require(shown.range(of: Array(start.utf8), from: before))
        // The cursor saved, then moved to the picture's top-left cell (1-based row;column), then the picture.
        let lead = String(decoding: shown[before..<image.lowerBound], as: UTF8.self)
        let place = try #require(lead.firstMatch(of: /\x1b7(?:\x1b_Ga=d,d=A\x1b\\)?\x1b\[(\d+);(\d+)H$/))
        #expect(Int(place.1)! > 1 && Int(place.2)! > 1, "inside the frame")
        if mode == .kitty {
            // The picture's pixels are its cells at 8 x 16: the terminal's resolution, not an assumed one.
            let sequence = String(decoding: shown[image.lowerBound...].prefix(200), as: UTF8.self)
            let size = try #require(sequence.firstMatch(of: /s=(\d+),v=(\d+),c=(\d+),r=(\d+)/), "\(sequence.debugDescription)")
            #expect(Int(size.1)! == Int(size.3)! * 8 && Int(size.2)! == Int(size.4)! * 16, "\(sequence.debugDescription)")
        }

        let open = terminal.written.count
        try terminal.type(Self.escape)
        let gone = mode == .kitty ? "\(Self.escape)_Ga=d,d=A\(Self.escape)\\" : "\(Self.escape)[2J"
        try await terminal.waitFor("the picture gone") { $0.range(of: Array(gone.utf8), from: open) != nil }
        try terminal.type("q")
        #expect(try await terminal.waitForExit() == 0)
        }
    }

    /// Symbols on a terminal with 24-bit colour (`COLORTERM=truecolor`): the terminal draws them from
    /// libchafa's own sequences, line by line, in the picture's colours; curses' 256 would round them.
    @Test func trueColourSymbolsAreWrittenLineByLine() async throws {
        try await Self.withThePhoto(mode: .symbols, environment: ["COLORTERM": "truecolor"]) { terminal in
        let before = terminal.written.count
        try terminal.type("v")
        let shown = try await terminal.waitFor("the picture") { bytes in
            bytes.range(of: Array("\(Self.escape)[38;2;".utf8), from: before)
                .map { bytes.range(of: Array("\(Self.escape)8".utf8), from: $0.upperBound) != nil } ?? false
        }
        let text = String(decoding: shown[before...], as: UTF8.self)
        let lines = text.matches(of: /\x1b\[\d+;\d+H(?:\x1b\[[0-9;]*m)*\x1b\[[0-9;]*[34]8;2;/).count
        #expect(lines >= 10, "one positioned line per row of the picture: \(lines)")
        try terminal.type(Self.escape + "q")
        #expect(try await terminal.waitForExit() == 0)
        }
    }

    /// Runs `body` with haul on a pseudo-terminal, photo-small.jpg downloaded (and so selected).
    static func withThePhoto(mode: PictureMode, environment: [String: String] = [:],
                             _ body: (PseudoTerminal) async throws -> Void) async throws {
        let dir = TempDirectory()
        try await withSampleServer(SampleServerConfiguration(port: 0, jpegs: true)) { server in
            let terminal = try PseudoTerminal(["--pictures", mode.rawValue, "-o", "out", server.downloadURL("photo-small.jpg")],
                                              in: dir.path, environment: environment)
            // The row's state column says done (padded with spaces, unlike the title bar's "0 of 0 done").
            try await terminal.waitFor("the download") { $0.contains("done   ") }
            try await body(terminal)
        }
    }
}
