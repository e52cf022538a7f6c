import CPNG
import Foundation
import HaulCore
import SampleServer
import TestSupport
import Testing

/// `haul view FILE`: a JPEG drawn to stdout in each format, byte for byte what a terminal takes; hostile files
/// get one line and a bounded memory.
@Suite struct ViewTests {
    /// A real progressive JPEG from the sample server (photo-small.jpg), and the directory it is in.
    static func photo() async throws -> TempDirectory {
        let dir = TempDirectory()
        try await withSampleServer(jpegs: true) { server in
            let exit = try await HaulProcess.run(["--plain", "-q", server.downloadURL("photo-small.jpg")], in: dir.path)
            #expect(exit.status == 0, "\(exit.stderr)")
        }
        return dir
    }

    static func view(_ arguments: [String], in dir: TempDirectory, term: String = "xterm-256color",
                     colorTerm: String = "") async throws -> HaulProcess.Exit {
        try await HaulProcess.run(["view"] + arguments, in: dir.path,
                                  environment: ["TERM": term, "COLORTERM": colorTerm, "TMUX": ""])
    }

    @Test func eachFormatIsItsTerminalsSequence() async throws {
        let dir = try await Self.photo()
        let kitty = try await Self.view(["--pictures", "kitty", "--width", "40", "--height", "12", "photo-small.jpg"], in: dir)
        #expect(kitty.status == 0, "\(kitty.stderr)")
        #expect(kitty.stdout.hasPrefix("\u{1B}_Ga=T,f=32,"), "kitty's graphics protocol, RGBA")
        #expect(kitty.stdout.contains("\u{1B}\\"))
        let sixel = try await Self.view(["--pictures", "sixel", "--width", "40", "--height", "12", "photo-small.jpg"], in: dir)
        #expect(sixel.stdout.hasPrefix("\u{1B}P") && sixel.stdout.prefix(12).contains("q"), "a DCS sixel string")
        #expect(sixel.stdout.contains("\u{1B}\\"))
        let iterm = try await Self.view(["--pictures", "iterm", "--width", "40", "--height", "12", "photo-small.jpg"], in: dir)
        #expect(iterm.stdout.hasPrefix("\u{1B}]1337;File=inline=1"), "\(iterm.stdout.prefix(40).debugDescription)")
        let none = try await Self.view(["--pictures", "none", "photo-small.jpg"], in: dir)
        #expect(none.status == 0 && none.stdout.isEmpty)
    }

    /// The picture libraries are loaded when first drawn with: one that cannot be loaded (here an empty file
    /// of its name, found first through `LD_LIBRARY_PATH`) is named in one line, and downloads go on without it.
    @Test func aPictureLibraryThatCannotBeLoadedIsNamed() async throws {
        let dir = try await Self.photo()
        let libraries = TempDirectory()
        for name in ["libjpeg.so.62", "libchafa.so.0"] {
            #expect(FileManager.default.createFile(atPath: libraries.path + "/" + name, contents: Data()))
        }
        let jpeg = try await HaulProcess.run(["view", "--pictures", "symbols", "photo-small.jpg"], in: dir.path,
                                             environment: ["TERM": "xterm-256color", "LD_LIBRARY_PATH": libraries.path])
        #expect(jpeg.status == 1)
        #expect(jpeg.stderr == "haul: view: photo-small.jpg: cannot preview: cannot load \(libraries.path)/libjpeg.so.62: file too short\n",
                "\(jpeg.stderr)")
        #expect(jpeg.stdout.isEmpty)
        try await withSampleServer(jpegs: true) { server in
            let exit = try await HaulProcess.run(["--plain", "-q", "-o", "again", server.downloadURL("photo-small.jpg")],
                                                 in: dir.path, environment: ["LD_LIBRARY_PATH": libraries.path])
            #expect(exit.status == 0, "\(exit.stderr)")
        }
        #expect(FileManager.default.contentsEqual(atPath: dir.path + "/again/photo-small.jpg",
                                                  andPath: dir.path + "/photo-small.jpg"))
    }

    @Test func symbolsFitTheCellsAskedFor() async throws {
        let dir = try await Self.photo()
        let exit = try await Self.view(["--pictures", "symbols", "--width", "30", "--height", "10", "photo-small.jpg"],
                                       in: dir, colorTerm: "truecolor")
        #expect(exit.status == 0, "\(exit.stderr)")
        let lines = exit.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect((1...10).contains(lines.count), "\(lines.count) lines")
        // Without the colour sequences, each line is at most 30 cells of block symbols.
        let visible = lines.map { $0.replacing(/\u{1B}\[[0-9;?]*[A-Za-z]/, with: "") }
        // One of the two bounds is met (the aspect decides which).
        #expect(visible.allSatisfy { $0.count <= 30 } && (lines.count == 10 || visible.contains { $0.count == 30 }),
                "\(visible.map(\.count))")
        #expect(exit.stdout.contains("\u{1B}[38;2;"), "true colour")
        let dumb = try await Self.view(["--width", "30", "--height", "10", "photo-small.jpg"], in: dir, term: "dumb")
        #expect(dumb.status == 0 && !dumb.stdout.contains("\u{1B}") && dumb.stdout.allSatisfy(\.isASCII),
                "a dumb terminal gets plain ASCII")
    }

    @Test func aPartAndAPreviewAreShownToo() async throws {
        let dir = try await Self.photo()
        let bytes = try Data(contentsOf: URL(fileURLWithPath: dir.file("photo-small.jpg")))
        try bytes.prefix(bytes.count / 3).write(to: URL(fileURLWithPath: dir.file("cut.jpg.part")))
        let exit = try await Self.view(["--pictures", "symbols", "--width", "20", "--height", "6", "cut.jpg.part"], in: dir)
        #expect(exit.status == 0 && !exit.stdout.isEmpty, "\(exit.stderr)")
    }

    /// A 64 x 48 gradient encoded as a PNG (Adam7-interlaced or not) by haul's own encoder.
    static func gradientPNG(interlaced: Bool) throws -> [UInt8] {
        var pixels: [UInt8] = []
        for i in 0..<(64 * 48) {
            pixels += [UInt8(i % 64 * 4), UInt8(i / 64 * 5), 128]
        }
        var data: UnsafeMutablePointer<UInt8>?
        var length: UInt = 0
        let status = pixels.withUnsafeBufferPointer {
            haul_png_encode_rgb($0.baseAddress, 64, 48, interlaced ? 1 : 0, &data, &length)
        }
        #expect(status == 0)
        defer { free(data) }
        return [UInt8](UnsafeBufferPointer(start: try #require(data), count: Int(length)))
    }

    /// A PNG too, and half of an interlaced one (the whole picture, coarse).
    @Test func aPNGAndHalfAnInterlacedOneAreShown() async throws {
        let dir = TempDirectory()
        let png = Data(try Self.gradientPNG(interlaced: true))
        try png.write(to: URL(fileURLWithPath: dir.file("whole.png")))
        try png.prefix(png.count / 2).write(to: URL(fileURLWithPath: dir.file("half.png.part")))
        let whole = try await Self.view(["--pictures", "kitty", "--width", "20", "--height", "6", "whole.png"], in: dir)
        #expect(whole.status == 0 && whole.stdout.hasPrefix("\u{1B}_Ga=T"), "\(whole.stderr)")
        let half = try await Self.view(["--pictures", "symbols", "--width", "20", "--height", "6", "half.png.part"], in: dir)
        #expect(half.status == 0 && !half.stdout.isEmpty, "\(half.stderr)")
    }

    /// A damaged or oversized PNG: libpng's own complaints ("libpng warning: ...", "libpng error: ...") never
    /// reach the terminal (in the full-screen interface they would land on the screen); haul says at most its
    /// one line.
    @Test func libpngNeverWritesToTheTerminal() async throws {
        let dir = TempDirectory()
        let png = try Self.gradientPNG(interlaced: false)
        // The compressed pixels damaged (a bad checksum and a broken stream), and a width over the limit.
        let idat = try #require(png.indices.dropLast(4).first { png[$0..<($0 + 4)] == [0x49, 0x44, 0x41, 0x54] })
        var damaged = png
        for i in (idat + 12)..<min(idat + 40, png.count - 16) { damaged[i] ^= 0x5A }
        var wide = png
        wide[16...19] = [0x00, 0x01, 0x11, 0x70]  // IHDR width 70000
        try Data(damaged).write(to: URL(fileURLWithPath: dir.file("damaged.png")))
        try Data(wide).write(to: URL(fileURLWithPath: dir.file("wide.png")))
        for name in ["damaged.png", "wide.png"] {
            let exit = try await Self.view(["--pictures", "symbols", "--width", "20", "--height", "6", name], in: dir)
            #expect(!exit.stderr.contains("libpng"), "\(name): \(exit.stderr)")
            let lines = exit.stderr.split(separator: "\n")
            #expect(lines.count <= 1 && lines.allSatisfy { $0.hasPrefix("haul: view: \(name): ") }, "\(name): \(exit.stderr)")
        }
    }

    @Test func hostileFilesGetOneLineAndBoundedMemory() async throws {
        let dir = try await Self.photo()
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir.file("photo-small.jpg"))))
        // The frame header (SOF0 or SOF2): its height and width become 65535.
        let sof = try #require(bytes.indices.dropLast(9).first { bytes[$0] == 0xFF && [0xC0, 0xC2].contains(bytes[$0 + 1]) })
        for i in (sof + 5)...(sof + 8) { bytes[i] = 0xFF }
        try Data(bytes).write(to: URL(fileURLWithPath: dir.file("huge.jpg")))
        try Data("GIF89a not a jpeg".utf8).write(to: URL(fileURLWithPath: dir.file("fake.jpg")))
        try Data([0xFF, 0xD8, 0xFF]).write(to: URL(fileURLWithPath: dir.file("stub.jpg")))
        for (name, reason) in [("huge.jpg", "too large to show (65535x65535)"), ("fake.jpg", "not a JPEG"),
                               ("stub.jpg", "the JPEG header is incomplete or damaged")] {
            let exit = try await HaulProcess.run(["view", "--pictures", "kitty", name], in: dir.path, measuringMemory: true)
            #expect(exit.status == 1, "\(name): \(exit.stderr)")
            #expect(exit.stderr == "haul: view: \(name): cannot preview: \(reason)\n")
            #expect(exit.stdout.isEmpty)
            #expect((exit.maxRSSKiB ?? .max) < 256 * 1024, "\(name): \(exit.maxRSSKiB ?? -1) KiB")
        }
        // 12000 x 8000 (96 Mpixel, under the refusal line): decoded scaled down or refused by libjpeg's memory
        // cap, either way in bounded memory and one line.
        bytes[sof + 5] = 0x1F; bytes[sof + 6] = 0x40  // height 8000
        bytes[sof + 7] = 0x2E; bytes[sof + 8] = 0xE0  // width 12000
        try Data(bytes).write(to: URL(fileURLWithPath: dir.file("big.jpg")))
        let big = try await HaulProcess.run(["view", "--pictures", "symbols", "--width", "20", "--height", "5", "big.jpg"],
                                            in: dir.path, measuringMemory: true)
        #expect(big.status == 0 || big.stderr.hasPrefix("haul: view: big.jpg: cannot preview: "), "\(big.stderr)")
        #expect((big.maxRSSKiB ?? .max) < 256 * 1024, "big.jpg: \(big.maxRSSKiB ?? -1) KiB")
    }
}

extension ViewTests {
    /// The config file's `pictures` key chooses `haul view`'s format too, and `--pictures` still wins.
    @Test func theConfigFilesPicturesKeyHoldsForView() async throws {
        let dir = try await Self.photo()
        let config = dir.file("config/haul")
        try FileManager.default.createDirectory(atPath: config, withIntermediateDirectories: true)
        try Data("pictures = \"iterm\"\n".utf8).write(to: URL(fileURLWithPath: config + "/config.toml"))
        let environment = ["TERM": "xterm-256color", "COLORTERM": "", "TMUX": "", "XDG_CONFIG_HOME": dir.file("config")]
        let configured = try await HaulProcess.run(["view", "--width", "20", "--height", "6", "photo-small.jpg"],
                                                   in: dir.path, environment: environment)
        #expect(configured.status == 0, "\(configured.stderr)")
        #expect(configured.stdout.hasPrefix("\u{1B}]1337;File=inline=1"), "\(configured.stdout.prefix(20).debugDescription)")
        let overridden = try await HaulProcess.run(["view", "--pictures", "none", "photo-small.jpg"], in: dir.path,
                                                   environment: environment)
        #expect(overridden.status == 0 && overridden.stdout.isEmpty, "\(overridden.stdout.prefix(20).debugDescription)")
    }
}
