/// Where reporters write: whole lines, to standard output and standard error.
///
/// Every line passes through `escaped` on its way to the sink, whoever built it: URLs, input-file lines,
/// server texts and option values echoed back can carry bytes meant for the terminal (an OSC that sets the
/// title, a CSI that clears the screen, a right-to-left override that reverses what follows), and none of
/// them may reach it raw.
package struct TextOutput: Sendable {
    package let out: @Sendable (String) -> Void
    package let err: @Sendable (String) -> Void

    /// `out` and `err` receive each line already escaped.
    package init(out: @escaping @Sendable (String) -> Void, err: @escaping @Sendable (String) -> Void) {
        self.out = { out(Self.escaped($0)) }
        self.err = { err(Self.escaped($0)) }
    }

    /// `line` with what a terminal would act on or hide made visible: C0 controls, DEL and C1 controls as
    /// `\x1b`, the bidirectional controls and marks and the line and paragraph separators as `\u{202E}`;
    /// a tab becomes a space. Everything else, letters of any script and emoji (with their joiners)
    /// included, is left alone. A line without such characters comes back unchanged, without a copy.
    static func escaped(_ line: String) -> String {
        guard line.unicodeScalars.contains(where: needsEscape) else { return line }
        var result = String.UnicodeScalarView()
        for scalar in line.unicodeScalars {
            guard needsEscape(scalar) else {
                result.append(scalar)
                continue
            }
            if scalar == "\t" {
                result.append(" ")
            } else if scalar.value <= 0xFF {
                let hex = String(scalar.value, radix: 16)
                result.append(contentsOf: ("\\x" + (hex.count < 2 ? "0" : "") + hex).unicodeScalars)
            } else {
                result.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            }
        }
        return String(result)
    }

    /// C0, DEL, C1; the bidi embeddings, overrides, isolates and marks (U+061C, U+200E/F, U+202A-202E,
    /// U+2066-2069); U+2028/2029, which some terminals take as line breaks.
    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x2028...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// The process's stdout and stderr, each line written with one `write(2)`.
    package static let standard = TextOutput(out: { writeLine($0, to: 1) }, err: { writeLine($0, to: 2) })

    private static func writeLine(_ line: String, to fd: Int32) {
        // A closed or full stdout loses the line; there is nowhere left to say so.
        try? FileIO.writeAll(fd, Array((line + "\n").utf8))
    }
}
