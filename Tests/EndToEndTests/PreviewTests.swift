import Foundation
import HaulCore
import HaulTUI
import SampleServer
import TestSupport
import Testing

/// Partial JPEG previews end to end: Cancel All in the TUI and `v`, and Ctrl-C in plain mode.
@Suite(.serialized) struct PreviewTests {
    /// The JPEGs, unthrottled: each test holds photo-large.jpg where it needs it (`SampleServerFaults.holdAt`).
    static let server = SampleServerConfiguration(port: 0, jpegs: true)
    /// At 1 MiB/s, so plain mode reports progress for a few seconds before the hold.
    static let throttled = SampleServerConfiguration(port: 0, rate: 1 << 20, jpegs: true)

    @Test func cancelAllDuringTheLargeJPEGSavesAPreviewThatDecodesAndVShowsIt() async throws {
        let dir = TempDirectory()
        try await withSampleServer(Self.server) { server in
            try Self.hold(server, at: 1, of: 2)  // the cancel lands mid-file however slow the machine
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
    ///
    /// The server holds the body at 30% and at 70% of the file until the test lets it go, so each picture is
    /// seen while the part is where the test put it, however slowly a loaded machine decodes (a download left
    /// to run could end before its first live picture was drawn).
    @Test func theLivePictureChangesAsTheDownloadAdvances() async throws {
        let dir = TempDirectory()
        try await withSampleServer(Self.server) { server in
            try Self.hold(server, at: 3, 7, of: 10)
            let tmux = try await Self.downloadingThePhoto(server, in: dir)
            try await tmux.waitFor("the download held at 30%") {
                (TUITests.percent(TUITests.row($0, "photo-large.jpg")) ?? 0) >= 29
            }
            try tmux.send("v")
            /// The picture's lines as drawn, colours included (the rest of the screen, its clock, changes anyway).
            func picture() throws -> [Substring] {
                try tmux.screenWithEscapes().split(separator: "\n").filter {
                    $0.unicodeScalars.contains { (0x2580...0x259F).contains($0.value) }
                }
            }
            try await tmux.waitFor("the live picture") { screen in
                screen.contains { $0.contains("photo-large.jpg.part  4000x3000  partial") }
                    && (try? picture().isEmpty) == false
            }
            let early = try picture()
            server.release()
            // Decoded again as bytes arrive: the picture changes while the part is still being written.
            try await tmux.waitFor("a sharper live picture") { screen in
                screen.contains { $0.contains("photo-large.jpg.part  4000x3000  partial") }
                    && (try? picture()).map { !$0.isEmpty && $0 != early } == true
            }
            server.release()
            try await tmux.waitFor("the finished picture") { screen in
                screen.contains { $0.contains("photo-large.jpg  4000x3000  (Esc closes)") }
                    && (try? picture().isEmpty) == false
            }
            #expect(try picture() != early, "the finished picture differs from the first")
            try tmux.send("Escape", "q")
            try await TUITests.expectExit(tmux, 0)
        }
    }

    /// Makes `server` hold photo-large.jpg's body at these fractions of the file until `release()`.
    static func hold(_ server: SampleServer, at numerators: Int..., of denominator: Int) throws {
        let size = try #require(server.catalog.first { $0.name == "photo-large.jpg" }).size
        var faults = SampleServerFaults()
        faults.holdAt = numerators.map { size * $0 / denominator }
        faults.only = "photo-large.jpg"
        server.setFaults(faults)
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
        try await withSampleServer(Self.throttled) { server in
            try Self.hold(server, at: 1, of: 2)
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
