import Foundation
import Testing
import TestSupport
@testable import HaulCore

// The fuzz pass as property tests: every parser that reads what a server (or a user) sends gets many generated
// inputs (random bytes, inputs built from the grammar's pieces, and mutations of the seed corpus in
// fuzz/corpus/, which the libFuzzer harness starts from too) and must not crash and must keep its promises
// (FuzzInvariants.swift). Each test prints "fuzz: PROPERTY: N inputs, F failures".
//
// HAUL_FUZZ_ITERATIONS=N sets the inputs per property (default 10,000; 1,000 under a sanitizer); HAUL_FUZZ_SEED=N picks other inputs
// (the default seed makes every run check the same ones); HAUL_FUZZ_TRACE=1 prints each input before it is
// checked, so that the last line before a crash is the input that crashed.

/// Serialized: the properties are CPU-bound, and side by side they would take both cores from the latency bounds
/// of the end-to-end tests running at the same time.
@Suite(.serialized) struct FuzzTests {
    @Test func responseHeadLines() async {
        await Fuzz.check("response head") { gen in
            switch gen.below(8) {
            case 0: [gen.bytes(gen.length())]  // one line holding anything, inner CR/LF included
            case 1: FuzzGen.lines(of: gen.bytes(gen.length() * 4))
            case 2, 3: FuzzGen.lines(of: gen.mutate(gen.pick(FuzzCorpus.responseHeads)))
            default: (0..<gen.below(14)).map { _ in gen.headerLine() }
            }
        } violations: { lines in
            var problems: [String] = []
            var builder = ResponseHead.Builder()
            var fromStrings = ResponseHead.Builder()
            var expectedCount = 0  // the reference: lines since the last status line with a colon after a name
            var allUTF8 = true
            for line in lines {
                line.withUnsafeBytes { builder.add(line: $0) }
                // Decoded once: each invalid sequence costs a thrown-and-caught error, and swift-testing takes
                // a backtrace of every throw.
                let text = String(decoding: line, as: UTF8.self)
                allUTF8 = allUTF8 && text.utf8.elementsEqual(line)
                fromStrings.add(line: text)
                if line.starts(with: "HTTP/".utf8) {
                    expectedCount = 0
                } else if let colon = line.firstIndex(of: UInt8(ascii: ":")),
                    line[..<colon].contains(where: { ![0x20, 0x09, 0x0D, 0x0A].contains($0) })
                {
                    expectedCount += 1
                }
            }
            problems += FuzzInvariants.headerViolations(builder.lines)
            problems += FuzzInvariants.headerViolations(fromStrings.lines)
            if builder.lines.count != expectedCount {
                problems.append("kept \(builder.lines.count) header lines, expected \(expectedCount)")
            }
            if allUTF8, fromStrings.lines.map({ [$0.name, $0.value] }) != builder.lines.map({ [$0.name, $0.value] })
            {
                problems.append("add(line: String) and add(line: bytes) disagree")
            }
            let head = ResponseHead(status: 206, headers: builder.lines, effectiveURL: "")
            problems += Fuzz.readerViolations(head)
            return problems
        }
    }

    @Test func contentRange() async {
        await Fuzz.check("content-range") { gen in
            [gen.chance(10) ? gen.bytes(gen.length()) : gen.contentRangeValue()]
        } violations: { parts in
            Fuzz.readerViolations(ResponseHead(
                status: 206, headers: [("Content-Range", String(decoding: parts[0], as: UTF8.self))], effectiveURL: ""))
        }
    }

    @Test func contentLength() async {
        await Fuzz.check("content-length") { gen in
            [gen.chance(10) ? gen.bytes(gen.length()) : gen.number()]
        } violations: { parts in
            Fuzz.readerViolations(ResponseHead(
                status: 200, headers: [("content-length", String(decoding: parts[0], as: UTF8.self))], effectiveURL: ""))
        }
    }

    @Test func sanitize() async {
        await Fuzz.check("sanitize") { gen in
            [gen.name()]
        } violations: { parts in
            let name = FileNaming.sanitize(String(decoding: parts[0], as: UTF8.self))
            return FuzzInvariants.nameViolations(name, again: FileNaming.sanitize(name), maxBytes: FileNaming.maxBytes)
        }
    }

    /// The ASCII shortcut of `sanitize` answers what the scalar-by-scalar way does, for names of ASCII pieces,
    /// control bytes, dots, spaces and separators included, and for names of any bytes.
    @Test func sanitizeShortcutAgrees() async {
        await Fuzz.check("sanitize shortcut") { gen in
            var ascii: [UInt8] = []
            let pieces = 1 + gen.below(12)
            for _ in 0..<pieces {
                if gen.chance(30) {
                    ascii += gen.oneOf([".", " ", "/", "\\", "..", "\t", "a.b", " x ", "\u{7F}"])
                } else {
                    let long = gen.chance(5)
                    let count = gen.below(long ? 300 : 20)
                    for _ in 0..<count { ascii.append(UInt8(0x20 + gen.below(0x5F))) }
                }
            }
            return [gen.chance(80) ? ascii : gen.name()]
        } violations: { parts in
            let name = String(decoding: parts[0], as: UTF8.self)
            let quick = FileNaming.sanitize(name), full = FileNaming.sanitizeScalars(name)
            return quick == full ? [] : ["\(FuzzInvariants.literal(name)): \(FuzzInvariants.literal(quick)) != "
                                         + "\(FuzzInvariants.literal(full))"]
        }
    }

    /// `masked` takes out exactly the password, whatever the user name, password, host and rest hold (a raw
    /// `@` or `:` in the password, any UTF-8 around it), and leaves a URL without one as it is.
    @Test func maskedHidesThePassword() async {
        await Fuzz.check("masked") { gen in
            func text(_ gen: inout FuzzGen, without excluded: String) -> [UInt8] {
                let bytes = Array(String(decoding: gen.bytes(gen.below(12)), as: UTF8.self).utf8)
                return bytes.filter { !excluded.utf8.contains($0) }
            }
            let scheme = gen.oneOf(["https", "http", "ftp", "x"])
            let user = text(&gen, without: ":@/?#")
            let password = Array("pw".utf8) + text(&gen, without: "/?#")
            let host = text(&gen, without: "@/?#")
            let rest = gen.chance(70) ? gen.oneOf(["/", "?", "#"]) + text(&gen, without: "") : []
            return [scheme, user, password, host, rest]
        } violations: { parts in
            let (scheme, user, password, host, rest) = (parts[0], parts[1], parts[2], parts[3], parts[4])
            let plain = String(decoding: scheme + Array("://".utf8) + user + Array("@".utf8) + host + rest, as: UTF8.self)
            let url = String(decoding: scheme + Array("://".utf8) + user + Array(":".utf8) + password + Array("@".utf8)
                             + host + rest, as: UTF8.self)
            let expected = String(decoding: scheme + Array("://".utf8) + user + Array(":***@".utf8) + host + rest,
                                  as: UTF8.self)
            var problems: [String] = []
            if URLRedaction.masked(url) != expected {
                problems.append("\(FuzzInvariants.literal(url)) -> \(FuzzInvariants.literal(URLRedaction.masked(url)))")
            }
            if URLRedaction.masked(plain) != plain { problems.append("\(FuzzInvariants.literal(plain)) changed") }
            return problems
        }
    }

    @Test func truncateAndSplit() async {
        await Fuzz.check("truncate and split") { gen in
            [gen.name(), Array(String(gen.chance(80) ? gen.below(300) : gen.below(5000)).utf8)]
        } violations: { parts in
            var problems: [String] = []
            let name = String(decoding: parts[0], as: UTF8.self)
            let (stem, ext) = FileNaming.split(name)
            if Array((stem + ext).utf8) != Array(name.utf8) { problems.append("stem + ext is not the name") }
            if !ext.isEmpty && (ext.utf8.first != UInt8(ascii: ".") || stem.isEmpty) {
                problems.append("odd split (\(FuzzInvariants.literal(stem)), \(FuzzInvariants.literal(ext)))")
            }
            let limit = parts.count > 1 ? Int(FuzzInvariants.strictDigits(parts[1].prefix(4)) ?? 0) : 0
            let cut = FileNaming.truncate(name, toBytes: limit)
            if cut.utf8.count > limit { problems.append("truncated to \(limit) bytes, got \(cut.utf8.count)") }
            if name.utf8.count <= limit && Array(cut.utf8) != Array(name.utf8) {
                problems.append("changed a name that fits")
            }
            return problems
        }
    }

    @Test func contentDisposition() async {
        await Fuzz.check("content-disposition") { gen in
            if gen.chance(25) {
                // A seed: "VALUE\nURL".
                let seed = gen.mutate(gen.pick(FuzzCorpus.contentDispositions))
                let newline = seed.firstIndex(of: 0x0A) ?? seed.endIndex
                return [Array(seed[..<newline]), Array(seed[newline...].dropFirst())]
            }
            return [gen.contentDisposition(), gen.url()]
        } violations: { parts in
            let header = String(decoding: parts[0], as: UTF8.self)
            let url = String(decoding: parts.count > 1 ? parts[1] : [], as: UTF8.self)
            var problems: [String] = []
            if FileNaming.filename(fromContentDisposition: header)?.isEmpty == true {
                problems.append("an empty file name instead of nil")
            }
            let name = FileNaming.name(contentDisposition: header, url: url)
            problems += FuzzInvariants.nameViolations(name, again: FileNaming.sanitize(name), maxBytes: FileNaming.maxBytes)
            return problems
        }
    }

    @Test func namesFromURLs() async {
        await Fuzz.check("url name") { gen in
            [gen.url()]
        } violations: { parts in
            let url = String(decoding: parts[0], as: UTF8.self)
            let name = FileNaming.name(contentDisposition: nil, url: url)
            return FuzzInvariants.nameViolations(name, again: FileNaming.sanitize(name), maxBytes: FileNaming.maxBytes)
        }
    }

    @Test func retryAfter() async {
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        await Fuzz.check("retry-after") { gen in
            [gen.retryAfterValue()]
        } violations: { parts in
            let value = String(decoding: parts[0], as: UTF8.self)
            guard let delay = HTTPStatus.retryAfter(value, now: now) else { return [] }
            var problems: [String] = []
            if delay < .zero { problems.append("negative delay \(delay)") }
            let trimmed = value.trimmingCharacters(in: .whitespaces)
            if let seconds = FuzzInvariants.strictDigits(trimmed.utf8), delay != .seconds(seconds) {
                problems.append("\(seconds) seconds read as \(delay)")
            }
            return problems
        }
    }

    @Test func rateLimit() async {
        await Fuzz.check("rate limit") { gen in
            [gen.rateValue()]
        } violations: { parts in
            guard let rate = RateLimit.parse(String(decoding: parts[0], as: UTF8.self)), rate < 1 else { return [] }
            return ["rate \(rate) < 1"]
        }
    }

    @Test func checksum() async {
        await Fuzz.check("checksum") { gen in
            [gen.checksumValue()]
        } violations: { parts in
            guard case .success(let checksum) = Checksum.parse(String(decoding: parts[0], as: UTF8.self)) else { return [] }
            let length = ["sha256": 64, "sha1": 40, "md5": 32][checksum.algorithm.rawValue]
            let hexDigits = Array("0123456789abcdef".utf8)
            guard checksum.hex.utf8.count == length, checksum.hex.utf8.allSatisfy(hexDigits.contains) else {
                return ["accepted \(FuzzInvariants.literal(checksum.hex)) as a \(checksum.algorithm.rawValue) digest"]
            }
            return []
        }
    }
}
