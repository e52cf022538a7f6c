import Foundation
import Testing
import TestSupport
@testable import HaulCore

// MARK: - The generator

/// Seeded SplitMix64 and what the properties make with it. Its own arithmetic throughout (no
/// `random(in:using:)`), so that a seed gives the same inputs with every toolchain.
struct FuzzGen {
    private var source: SplitMix64

    init(seed: UInt64) { source = SplitMix64(seed: seed) }

    mutating func next() -> UInt64 { source.next() }

    /// 0..<n (0 when n <= 1).
    mutating func below(_ n: Int) -> Int { n <= 1 ? 0 : Int(next() % UInt64(n)) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    mutating func pick<T>(_ options: [T]) -> T { options[below(options.count)] }
    /// One of `options`, as UTF-8.
    mutating func oneOf(_ options: [String]) -> [UInt8] { Array(options[below(options.count)].utf8) }

    /// Mostly short, now and then long: 0..<8 (40%), 8..<40 (36%), 40..<300 (22%), 300..<4000 (2%).
    mutating func length() -> Int {
        switch below(50) {
        case 0..<20: below(8)
        case 20..<38: 8 + below(32)
        case 38..<49: 40 + below(260)
        default: 300 + below(3700)
        }
    }

    /// Any byte, a byte that means something to these parsers, or printable ASCII.
    mutating func byte() -> UInt8 {
        switch below(10) {
        case 0..<4: UInt8(truncatingIfNeeded: next())
        case 4..<7: pick(Self.interestingBytes)
        default: UInt8(0x20 + below(0x5F))
        }
    }

    /// `count` or a few more bytes: a quarter of the time any bytes at all, else text (ASCII, with tokens, a few of
    /// them not UTF-8). Mostly text because every invalid sequence decoded costs a thrown-and-caught error inside
    /// the standard library, and swift-testing takes a backtrace of every throw: slow, and not what is tested.
    mutating func bytes(_ count: Int) -> [UInt8] {
        let raw = chance(25)
        var out: [UInt8] = []
        while out.count < count {
            if chance(10) {
                out += pick(Self.tokens)
            } else if raw {
                out.append(byte())
            } else {
                out.append(chance(70) ? UInt8(0x20 + below(0x5F)) : pick(Self.interestingASCII))
            }
        }
        return out
    }

    /// A decimal-looking field: small, huge, at and past Int64.max, signed, padded, or not quite a number.
    mutating func number() -> [UInt8] {
        var out: [UInt8]
        switch below(12) {
        case 0..<3: out = Array(String(below(1000)).utf8)
        case 3..<5: out = Array(String(next() >> UInt64(1 + below(63))).utf8)
        case 5..<7:
            out = oneOf(["0", "9223372036854775806", "9223372036854775807", "9223372036854775808", "18446744073709551615",
                        "18446744073709551616", "0000000000000000000000000000042", "99999999999999999999999999999"])
        case 7: out = Array(String(repeating: "9", count: 1 + below(60)).utf8)
        case 8: out = oneOf(["-", "+", "-0", "--", "+-"]) + number()
        case 9:
            out = oneOf(["", " 5", "5 ", "1e3", "0x10", "1.5", "1_000", "\u{FF15}", "\u{0663}", "\u{0661}\u{0662}", "5\u{301}",
                        "∞", "NaN", "inf", "1,2", "*"])
        case 10: out = number() + oneOf(["", " ", "\t", "\0", "\r", "x", "."]) + number()
        default: out = bytes(below(8))
        }
        return out
    }

    /// `input` changed one to eight times: bits flipped, bytes replaced, tokens and chunks inserted, deleted,
    /// repeated or spliced, numbers swapped, the end cut off (often inside a UTF-8 sequence).
    mutating func mutate(_ input: [UInt8]) -> [UInt8] {
        var out = input
        for _ in 0..<(1 + below(8)) {
            let at = below(out.count + 1)
            switch below(11) {
            case 0 where !out.isEmpty: out[min(at, out.count - 1)] ^= 1 << UInt8(below(8))
            case 1 where !out.isEmpty: out[min(at, out.count - 1)] = byte()
            case 2: out.insert(contentsOf: pick(Self.tokens), at: at)
            case 3: out.removeSubrange(at..<min(out.count, at + 1 + below(16)))
            case 4: out.insert(contentsOf: out[at..<min(out.count, at + 1 + below(16))], at: below(out.count + 1))
            case 5: out.insert(contentsOf: bytes(1 + below(8)), at: at)
            case 6: out.replaceSubrange(at..<min(out.count, at + below(8)), with: pick(Self.tokens))
            case 7: out.removeSubrange(at...)
            case 8:
                let chunk = Array(out[at..<min(out.count, at + 1 + below(4))])
                var run: [UInt8] = []
                for _ in 0..<below(400) { run += chunk }
                out.insert(contentsOf: run, at: at)
            case 9:
                // A run of digits becomes another number.
                guard let start = out.indices.first(where: { $0 >= at && out[$0] >= 0x30 && out[$0] <= 0x39 }) else { break }
                let end = out[start...].firstIndex { $0 < 0x30 || $0 > 0x39 } ?? out.endIndex
                out.replaceSubrange(start..<end, with: number())
            default: out.insert(byte(), at: at)
            }
        }
        return out
    }

    /// Splits after each LF, as curl hands header lines over.
    static func lines(of block: [UInt8]) -> [[UInt8]] {
        var lines: [[UInt8]] = []
        var current: [UInt8] = []
        for byte in block {
            current.append(byte)
            if byte == 0x0A { lines.append(current); current = [] }
        }
        return current.isEmpty ? lines : lines + [current]
    }

    // MARK: Header lines

    mutating func headerLine() -> [UInt8] {
        let body: [UInt8]
        switch below(12) {
        case 0:
            body = oneOf(["HTTP/1.1 ", "HTTP/1.0 ", "HTTP/2 ", "HTTP/3 ", "HTTP/", "http/1.1 ", "HTTP/1.1"]) + number()
                + oneOf([" OK", " Partial Content", "", " ", " \u{FF}"])
        case 1: body = bytes(length())
        case 2: body = oneOf(["", " ", "\t", " continued", "\tfolded: value", ":", ": value", " : x"])
        default:
            body = headerName() + oneOf([": ", ":", " : ", ":\t", "::", ": \r ", ":  ", " :"]) + headerValue()
        }
        return body + oneOf(["\r\n", "\r\n", "\r\n", "\n", "", "\r", "\r\r\n", "\n\r", " \r\n"])
    }

    mutating func headerName() -> [UInt8] {
        if chance(15) { return bytes(below(12)) }
        var name = oneOf(["Content-Range", "Content-Length", "Content-Disposition", "Retry-After", "ETag", "Last-Modified",
                         "Content-Type", "Location", "X-Foo", "Content-Rangé", "Content-Length\u{0}", "Content_Length"])
        for index in name.indices where chance(20) && name[index] >= 0x41 { name[index] ^= 0x20 }  // any case
        return name
    }

    mutating func headerValue() -> [UInt8] {
        switch below(6) {
        case 0: contentRangeValue()
        case 1: number()
        case 2: contentDisposition()
        case 3: retryAfterValue()
        default: bytes(length())
        }
    }

    // MARK: Content-Range

    /// An Int64 of 1 to 19 digits.
    mutating func int64(below bound: Int64 = .max) -> Int64 {
        let magnitude = UInt64(bound) >> UInt64(below(63))
        return Int64(next() % max(1, magnitude))
    }

    mutating func contentRangeValue() -> [UInt8] {
        if chance(40) {
            // Consistent numbers (a valid answer), then maybe spoilt.
            let total = 1 + int64(below: .max - 1)
            let first = int64(below: total)
            let last = first + int64(below: total - first)
            let value = Array("bytes \(first)-\(last)/\(chance(15) ? "*" : String(total))".utf8)
            return chance(30) ? mutate(value) : value
        }
        if chance(10) { return oneOf(["bytes */", "bytes */*", "bytes *", "*/"]) + number() }
        var out = oneOf(["bytes", "bytes", "BYTES", "Bytes", "byte", "bytes=", "", "items", "bytes\t", "bytes\u{0}"])
        out += oneOf([" ", " ", "", "  ", "\t", "\u{A0}"])
        out += chance(90) ? number() : []
        out += chance(90) ? Array("-".utf8) : oneOf(["", "--", "\u{2013}", "/"])
        out += chance(90) ? number() : []
        out += chance(90) ? Array("/".utf8) : oneOf(["", "//", " / ", "-"])
        out += chance(20) ? Array("*".utf8) : chance(90) ? number() : oneOf(["", "*/*", "**", " *"])
        return out
    }

    // MARK: Names

    /// A file name, of pieces that matter to `sanitize`; `longRuns` in a hundred get a run around or past maxBytes.
    mutating func name(longRuns: Int = 15) -> [UInt8] {
        switch below(10) {
        case 0, 1: return bytes(chance(longRuns) ? length() : below(40))
        case 2: return mutate(pick(Self.namePieces) + pick(Self.namePieces))
        default:
            var out: [UInt8] = []
            for _ in 0..<(1 + below(8)) { out += pick(Self.namePieces) }
            if chance(longRuns) {
                // A long run: mostly around maxBytes, now and then well past it.
                let piece = pick(Self.namePieces)
                let target = chance(70) ? 200 + below(100) : 300 + below(2700)
                while out.count < target { out += piece }
                if chance(50) { out += pick(Self.namePieces) }  // an extension to keep, or not
            }
            if chance(10), !out.isEmpty { out.removeLast(1 + below(min(3, out.count))) }  // a UTF-8 sequence cut short
            return out
        }
    }

    // MARK: Content-Disposition

    mutating func contentDisposition() -> [UInt8] {
        if chance(5) { return bytes(length()) }
        var out = oneOf(["attachment", "attachment", "inline", "", "Attachment", "form-data", "attachment ",
                         "\"attachment\""])
        for _ in 0..<below(5) {
            out += oneOf(["; ", "; ", ";", " ; ", ";;", "; ;", ",", " ", ";\t"]) + parameter()
        }
        if chance(10) { out += bytes(below(12)) }
        return out
    }

    mutating func parameter() -> [UInt8] {
        let name = chance(10) ? bytes(below(10))
            : oneOf(["filename", "filename", "filename*", "filename*", "FILENAME", "Filename*", "name", "size", "",
                    "filename *", " filename", "file name", "filename*0*", "creation-date"])
        let equals = oneOf(["=", "=", "=", " = ", "= ", "", "==", "=\""])
        let value: [UInt8]
        switch below(10) {
        case 0..<4:
            // Quoted, with escapes, nested quotes, or no closing quote.
            var text: [UInt8] = []
            for byte in self.name(longRuns: 4) {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || chance(3) { text.append(UInt8(ascii: "\\")) }
                text.append(byte)
            }
            if chance(10) { text += oneOf(["\"", "\\", "\\\"", "\"\"", "\";x=\""]) }
            value = [UInt8(ascii: "\"")] + text + (chance(85) ? [UInt8(ascii: "\"")] : [])
        case 4..<8:
            var extended = oneOf(["UTF-8", "UTF-8", "utf-8", "ISO-8859-1", "iso-8859-1", "us-ascii", "", "UTF-16",
                                  "UTF-8'en", "'"])
            extended += oneOf(["'", "'", "", "''"])
            extended += oneOf(["", "", "en", "de-DE", "'"])
            extended += oneOf(["'", "'", ""])
            extended += percentEncoded(self.name(longRuns: 4))
            value = extended
        case 8: value = self.name(longRuns: 4)
        default: value = []
        }
        return name + equals + value
    }

    /// Some bytes as %XX (either case), some left as they are, and now and then a broken escape.
    mutating func percentEncoded(_ raw: [UInt8]) -> [UInt8] {
        let hex = Array((chance(50) ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        var out: [UInt8] = []
        for byte in raw {
            if chance(3) {
                out += oneOf(["%", "%G", "%G1", "%1", "%C3", "%E2%80", "%FF", "%00", "%2F", "%5C", "%2e%2e%2f", "%%", "%c3%28",
                             "%E2%80%AE", "%0A"])
            }
            if chance(60) { out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]] } else { out.append(byte) }
        }
        return out
    }

    // MARK: URLs

    mutating func url() -> [UInt8] {
        if chance(15) { return mutate(Array(pick(FuzzCorpus.contentDispositions).split(separator: 0x0A).last ?? [])) }
        if chance(5) { return bytes(length()) }
        var out = oneOf(["http://", "https://", "https://", "HTTP://", "ftp://", "file:///", "", "://", "http:/", "http:",
                        "data:", "javascript:", "h://x://", "sftp://"])
        out += oneOf(["h", "example.com", "127.0.0.1:8080", "[::1]:8080", "user:pw@h", "", "h:99999", "xn--nxasmq6b.example",
                     "h%2F", "h?", "h#"])
        for _ in 0..<below(5) {
            out += [UInt8(ascii: "/")] + (chance(50) ? percentEncoded(name(longRuns: 3)) : name(longRuns: 3))
        }
        if chance(10) { out.append(UInt8(ascii: "/")) }
        if chance(30) {
            out += [UInt8(ascii: "?")] + (chance(30) ? percentEncoded(name(longRuns: 3))
                : oneOf(["", "a=b", "x=1&y=2", "photo.jpg", "../../etc/passwd", "%2F%2e%2e", "&", "=", "photo%20one.jpg",
                        "http://evil/x.exe", "..", ".", "%"]))
        }
        if chance(20) { out += [UInt8(ascii: "#")] + oneOf(["", "frag", "a/b", "?x", "/../x", "%2F"]) }
        return Array(out.prefix(3000))
    }

    // MARK: Retry-After, rates, checksums

    mutating func retryAfterValue() -> [UInt8] {
        switch below(10) {
        case 0..<3: return oneOf(["", " ", "  ", "\t"]) + number() + oneOf(["", " ", "\t"])
        case 3..<7:
            var date = oneOf(["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun", "mon", "XYZ", "", "Monday"])
            date += oneOf([", ", ",", " "])
            date += chance(70) ? Array(String(below(35)).utf8) : number()
            date += oneOf([" Jan ", " Feb ", " Mar ", " Apr ", " May ", " Jun ", " Jul ", " Aug ", " Sep ", " Oct ", " Nov ",
                           " Dec ", " jan ", " JAN ", " Foo ", " "])
            date += chance(60)
                ? oneOf(["2026", "1970", "1969", "0000", "0001", "9999", "10000", "99999", "999999", "292278994"]) : number()
            for separator in [" ", ":", ":"] { date += oneOf([separator]) + number() }
            date += oneOf([" GMT", " GMT", " UTC", " PST", " +0000", " -1200", " Z", " GMT+14", "", " ABC"])
            return chance(20) ? mutate(date) : date
        case 7: return mutate(oneOf(["120", "0", "Wed, 21 Oct 2015 07:28:00 GMT", "Mon, 23 Nov 2026 20:18:16 GMT"]))
        default: return bytes(length())
        }
    }

    mutating func rateValue() -> [UInt8] {
        if chance(10) { return bytes(below(16)) }
        let amount = chance(50) ? number()
            : oneOf(["1.5", "0.0001", "0.4", "0.5", "1e308", "1e-9", "nan", "inf", "-inf", "-5", "0x1p3", ".5", "5.", "1e19",
                    "9.3e18", "8e18", "8.9e15"])
        var value = oneOf(["", "", " "]) + amount
        value += oneOf(["", "k", "K", "m", "M", "g", "G", "t", "kb", "KiB", "é", "\u{1C5}", " ", " K", "kk"])
        value += oneOf(["", " ", "\t"])
        return chance(20) ? mutate(value) : value
    }

    mutating func checksumValue() -> [UInt8] {
        if chance(10) { return bytes(length()) }
        var out = oneOf(["sha256", "sha256", "SHA256", "Sha1", "sha1", "md5", "MD5", "sha512", "", "sha-256", "\u{17F}ha1"])
        out += oneOf(["=", "=", "=", "==", ":", ""])
        let length = chance(70) ? pick([64, 40, 32]) : chance(50) ? pick([63, 65, 0, 31, 41]) : below(100)
        for _ in 0..<length {
            out += chance(97) ? [pick(Array("0123456789abcdefABCDEF".utf8))]
                : oneOf(["g", "\u{FF41}", "\u{FF21}", "\u{FF10}", "\u{0663}", "\u{FF46}", " ", "\u{301}", "é", "\u{212A}"])
        }
        return chance(15) ? mutate(out) : out
    }

    // MARK: Pieces

    static let interestingBytes: [UInt8] = [
        0x00, 0x09, 0x0A, 0x0D, 0x20, 0x22, 0x25, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x2F, 0x30, 0x39, 0x3A, 0x3B, 0x3D, 0x5C,
        0x7F, 0x80, 0x9F, 0xC3, 0xE2, 0xF0, 0xFF,
    ]

    static let interestingASCII = interestingBytes.filter { $0 < 0x80 }

    static let tokens: [[UInt8]] = [
        "\r\n", "\n", "\r", "\0", "\t", " ", "\u{7F}", "\u{85}", "\u{9F}", "\u{A0}", "\u{FEFF}", "\u{202E}", "\u{202A}",
        "\u{2066}", "\u{2069}", "\u{200E}", "\u{200F}", "\u{061C}", "\u{2028}", "\u{3000}", "\u{301}", "\u{200D}",
        "\u{FE0F}", "😀", "👨‍👩‍👧‍👦", "🇫🇷", "\u{1F1EB}", "é", "e\u{301}", "日本語", "\u{FFFD}", "/", "\\", ".", "..", "../",
        "..\\", "/\u{301}", ".\u{301}", " \u{301}", "%", "%2F", "%2f", "%5C", "%2e%2e%2f", "%00", "%0A", "%C3%A9", "%C3",
        "%E2%80%AE", "%ZZ", "%G1", "\"", "\\\"", "'", "''", ";", "=", ":", ",", "*", "-", "+", "bytes ", "filename=",
        "filename*=", "UTF-8''", "iso-8859-1'en'", "HTTP/1.1 ", "HTTP/", "Content-Range: ", "Content-Length: ",
        "Content-Disposition: ", "0", "1", "9223372036854775807", "9223372036854775808", "18446744073709551616",
        "99999999999999999999999", "-1", "://", "?", "#", "&",
    ].map { Array($0.utf8) } + [
        // Not UTF-8: a lead byte alone, a cut sequence, an overlong "/", a surrogate, past U+10FFFF.
        [0xC3], [0xE2, 0x80], [0xF0, 0x9F, 0x98], [0xFF], [0xFE], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0x80],
        [0xF4, 0x90, 0x80, 0x80],
    ]

    static let namePieces: [[UInt8]] = [
        "a", "file", "photo", "report", "日本語", "fotó", "é", "e\u{301}", ".", "..", ".txt", ".jpeg", ".tar.gz",
        ".averyveryverylongextension", "/", "\\", "../", "..\\", " ", "\t", "\u{A0}", "\u{3000}", "\u{2028}", "\0", "\u{1}",
        "\n", "\r", "\u{7F}", "\u{85}", "\u{9F}", "\u{FEFF}", "\u{202E}", "\u{202A}", "\u{2066}", "\u{2069}", "\u{200E}",
        "\u{200F}", "\u{061C}", "\u{301}", "\u{200D}", "😀", "👨‍👩‍👧‍👦", "🇫🇷", "\u{1F1EB}", ".\u{301}", "/\u{301}",
        "\\\u{301}", " \u{301}", "\u{FFFD}", "%2F", "~", "-", "CON",
    ].map { Array($0.utf8) }
}
