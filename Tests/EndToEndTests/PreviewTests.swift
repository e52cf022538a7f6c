import Foundation
import HaulCore
import HaulTUI
import SampleServer
import TestSupport
import Testing

/// Partial JPEG previews end to end: Cancel All in the TUI and `v`, and Ctrl-C in plain mode.
@Suite(.serialized) struct PreviewTests {
    /// Per connection: photo-large.jpg (about 6 MB) takes about 6 s, so a cancel lands mid-file.
    static let server = SampleServerConfiguration(port: 0, rate: 1 << 20, jpegs: true)

    @Test func cancelAllDuringTheLargeJPEGSavesAPreviewThatDecodesAndVShowsIt() async throws {
        let dir = TempDirectory()
        try await withSampleServer(Self.server) { server in
            let tmux = try await Self.downloadingThePhoto(server, in: dir)
            try await tmux.waitFor("a tenth of the picture") {
                (TUITests.percent(TUITests.row($0, "photo-large.jpg")) ?? 0) >= 10
            }
            try tmux.send("C")
            try await tmux.waitFor("the preview saved", within: .seconds(10)) {
                // The state column is fixed-width: "cancelled, partial preview saved" ends in an ellipsis.
                TUITests.row($0, "photo-large.jpg")?.contains("cancelled, partial previe") == true
            }
            let preview = dir.file("out/photo-large.partial.jpg")
            let decoded = try PictureImage(path: preview)
            #expect(decoded.width == 4000 && decoded.height == 3000, "the whole picture, blurred")
            #expect(decoded.rowsDecoded == decoded.image.height, "every row (decoded scaled down to fit the screen)")
            #expect(FileManager.default.fileExists(atPath: dir.file("out/photo-large.jpg.part")), "still resumable")

            try tmux.send("v")
            try await tmux.waitFor("the picture") { screen in
                screen.contains { $0.contains("photo-large.partial.jpg  4000x3000") }
                    && screen.contains { $0.unicodeScalars.contains { (0x2580...0x259F).contains($0.value) } }
            }
            try tmux.send("Escape", "q")
            try await TUITests.expectExit(tmux, 0)
        }
    }

    /// `v` on a JPEG while it downloads: the picture comes from the part and sharpens as bytes arrive (a
    /// progressive JPEG goes from blurred to sharp), then becomes the finished file.
    @Test func theLivePictureChangesAsTheDownloadAdvances() async throws {
        let dir = TempDirectory()
        try await withSampleServer(Self.server) { server in
            let tmux = try await Self.downloadingThePhoto(server, in: dir)
            try await tmux.waitFor("a quarter of the picture") {
                (TUITests.percent(TUITests.row($0, "photo-large.jpg")) ?? 0) >= 25
            }
            try tmux.send("v")
            func picture(_ screen: [String]) -> [String] {
                screen.filter { $0.unicodeScalars.contains { (0x2580...0x259F).contains($0.value) } }
            }
            let early = try await tmux.waitFor("the live picture", within: .seconds(10)) { screen in
                screen.contains { $0.contains("photo-large.jpg.part  4000x3000  partial") } && !picture(screen).isEmpty
            }
            let earlyColours = try tmux.screenWithEscapes()
            // Decoded again as bytes arrive: the picture changes while the part is still being written.
            _ = try await tmux.waitFor("a sharper live picture", within: .seconds(20)) { screen in
                screen.contains { $0.contains("photo-large.jpg.part") } && (try? tmux.screenWithEscapes()) != earlyColours
            }
            let done = try await tmux.waitFor("the finished picture", within: .seconds(30)) { screen in
                screen.contains { $0.contains("photo-large.jpg  4000x3000  (Esc closes)") }
            }
            #expect(!picture(done).isEmpty && !picture(early).isEmpty)
            #expect(try tmux.screenWithEscapes() != earlyColours, "the finished picture differs from the first")
            try tmux.send("Escape", "q")
            try await TUITests.expectExit(tmux, 0)
        }
    }

    /// The full screen on `server`'s files, with photo-large.jpg started from them, in the downloads view.
    static func downloadingThePhoto(_ server: SampleServer, in dir: TempDirectory) async throws -> TmuxSession {
        // A long stall timeout: under TSan at its busiest the in-process server once sent nothing for 15 s.
        let tmux = try TmuxSession(["--server", server.baseURL, "-o", "out", "--timeout", "300"], in: dir.path)
        let files = try await tmux.waitFor("the files listing") { TUITests.row($0, "photo-large.jpg") != nil }
        let photo = try #require(files.firstIndex { TUITests.row([$0], "photo-large.jpg") != nil })
        let selected = try #require(files.firstIndex { $0.hasPrefix("›") })
        try tmux.send(contentsOf: Array(repeating: "Down", count: photo - selected) + ["Enter", "Tab"])
        return tmux
    }

    @Test func ctrlCInPlainModeSavesThePreviewAndSaysWhere() async throws {
        let dir = TempDirectory()
        try await withSampleServer(Self.server) { server in
            let url = server.downloadURL("photo-large.jpg")
            let process = try HaulProcess(["--plain", url], in: dir.path)
            let started = try await within(20, "the download to start") {
                await process.firstLine { $0.hasPrefix("photo-large.jpg  ") }
            }
            #expect(started != nil)
            process.send(SIGINT)
            let exit = await process.wait()
            #expect(exit.status == 130)
            #expect(exit.stdout.contains("photo-large.jpg: partial preview saved: ./photo-large.partial.jpg"),
                    "\(exit.stdout)")
            #expect(exit.stderr == "haul: photo-large.jpg: interrupted (\(url))\n")
            let decoded = try PictureImage(path: dir.file("photo-large.partial.jpg"))
            #expect(decoded.width == 4000)
        }
    }
}
