import ArgumentParser
import CLinux
import Glibc
import HaulCore
import HaulTUI

/// `haul view FILE`: draws a JPEG or PNG (complete, `NAME.part`, or a `STEM.partial.EXT` preview) on the terminal, as
/// an image protocol or symbols, and exits.
struct ViewCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "view",
        abstract: "Draw a JPEG or PNG (a finished file, a NAME.part, or a partial preview) to stdout and exit.",
        discussion: """
            The format is what the terminal supports, as libchafa detects it (kitty, sixel, iTerm2 images; \
            inside tmux or screen, and on other terminals, coloured symbols; plain ASCII on a dumb terminal), \
            or --pictures. Exit codes: 0 drawn, 1 the file cannot be previewed (not a JPEG or PNG, damaged header, \
            too large), 2 usage, 3 the file cannot be read.
            """)

    @Argument(help: ArgumentHelp("The picture.", valueName: "file"))
    var path: String

    @Option(help: ArgumentHelp("Width in cells (default: the terminal's, else 80).", valueName: "cells"))
    var width: Int?

    @Option(help: ArgumentHelp("Height in cells (default: the terminal's less one line, else 24).", valueName: "cells"))
    var height: Int?

    @Option(help: ArgumentHelp("kitty, sixel, iterm, symbols or none (default: detected).", valueName: "mode"))
    var pictures: PictureMode?

    func validate() throws {
        if let width, !(1...4096).contains(width) { throw ValidationError("--width must be from 1 to 4096 cells") }
        if let height, !(1...4096).contains(height) { throw ValidationError("--height must be from 1 to 4096 cells") }
    }

    /// Runs `arguments` (after the verb) and returns the exit code.
    static func run(_ arguments: [String], environment: [String: String]) -> Int32 {
        switch parseVerb("view", arguments) {
        case .success(let command): return command.draw(environment: environment)
        case .failure(let exit): return exit.code
        }
    }

    func draw(environment: [String: String]) -> Int32 {
        let name = FilePath.baseName(of: path)
        let image: PictureImage
        do {
            image = try PictureImage(path: path)
        } catch {
            TextOutput.standard.err("haul: view: \(name): cannot preview: \(error.message)")
            return error.category.exitCode
        }
        var size = winsize()
        let terminal = ioctl(1, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 && size.ws_row > 1
        let columns = width ?? (terminal ? Int(size.ws_col) : 80)
        let lines = height ?? (terminal ? Int(size.ws_row) - 1 : 24)
        let mode = pictures ?? PictureMode.detect(environment: environment)
        if mode != .none, let failure = ChafaPicture.unavailable {
            TextOutput.standard.err("haul: view: \(name): cannot preview: \(failure)")
            return FailureCategory.other.exitCode
        }
        let printed = ChafaPicture.print(image.image, columns: columns, lines: lines, mode: mode,
                                         colors: Self.colors(environment), environment: environment,
                                         cell: CellPixels.of(terminal: 1) ?? .assumed)
        var bytes = printed.bytes
        if !bytes.isEmpty { bytes.append(UInt8(ascii: "\n")) }
        _ = try? FileIO.writeAll(1, bytes)
        return 0
    }

    /// The colours symbols use: true colour when `COLORTERM` says so, none on a dumb terminal, else 256.
    static func colors(_ environment: [String: String]) -> ColorCapability {
        let term = environment["TERM"] ?? ""
        if term.isEmpty || term == "dumb" { return .shades }
        let colorTerm = environment["COLORTERM"]?.lowercased() ?? ""
        return colorTerm == "truecolor" || colorTerm == "24bit" ? .trueColor : .palette256
    }
}

extension PictureMode: ExpressibleByArgument {}
