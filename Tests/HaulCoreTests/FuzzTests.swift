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

// MARK: - The runner

enum Fuzz {
    static let environment = ProcessInfo.processInfo.environment
    /// Under a sanitizer (`make test-tsan`) a tenth: these parsers share no state, so the sanitized run adds
    /// nothing but minutes; the plain run (`make test`) covers the full count.
    static let iterations = environment["HAUL_FUZZ_ITERATIONS"].flatMap { Int($0) }
        ?? (environment["HAUL_SANITIZED"] != nil ? 1_000 : 10_000)
    static let seed = environment["HAUL_FUZZ_SEED"].flatMap { UInt64($0) } ?? 0x4841_554C_2D46_555A
    static let trace = environment["HAUL_FUZZ_TRACE"] != nil

    /// Checks a property on `iterations` generated inputs (each a list of byte strings). On failures, records
    /// one issue with the seed and the first failing input made as small as it goes.
    static func check(
        _ property: String, sourceLocation: SourceLocation = #_sourceLocation,
        generate: (inout FuzzGen) -> [[UInt8]], violations: ([[UInt8]]) -> [String]
    ) async {
        // Each property its own stream (the seed mixed with an FNV-1a hash of its name), so that adding one
        // leaves the others' inputs alone.
        let salt = property.utf8.reduce(0xCBF2_9CE4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 }
        var gen = FuzzGen(seed: seed ^ salt)
        var failures = 0
        var first: (index: Int, input: [[UInt8]])?
        for index in 0..<iterations {
            // A long CPU-bound loop on one of the cooperative pool's two threads: let the other tasks of the
            // process (an in-process server cancelling a response, say) have it now and then.
            if index % 64 == 63 { await Task.yield() }
            let input = generate(&gen)
            if trace { print("fuzz: \(property) #\(index): \(describe(input))") }
            if !violations(input).isEmpty {
                failures += 1
                if first == nil { first = (index, input) }
            }
        }
        print("fuzz: \(property): \(iterations) inputs, \(failures) failures (seed \(seed))")
        guard let first else { return }
        let minimal = shrink(first.input) { !violations($0).isEmpty }
        Issue.record(
            """
            fuzz: \(property): \(failures) of \(iterations) inputs fail (seed \(seed), first at #\(first.index))
            minimal input: \(describe(minimal))
            violations: \(violations(minimal).joined(separator: "; "))
            """, sourceLocation: sourceLocation)
    }

    /// A smaller input that still fails: drops whole parts, then chunks of halving size inside each part.
    static func shrink(_ input: [[UInt8]], fails: ([[UInt8]]) -> Bool) -> [[UInt8]] {
        var best = input
        var budget = 3_000
        func tries(_ candidate: [[UInt8]]) -> Bool {
            budget -= 1
            guard budget > 0, fails(candidate) else { return false }
            best = candidate
            return true
        }
        var shrunk = true
        while shrunk && budget > 0 {
            shrunk = false
            var part = 0
            while part < best.count, best.count > 1 {
                var candidate = best
                candidate.remove(at: part)
                if tries(candidate) { shrunk = true } else { part += 1 }
            }
            for part in best.indices {
                var size = max(1, best[part].count / 2)
                while size >= 1 && budget > 0 {
                    var start = 0
                    while start + size <= best[part].count {
                        var candidate = best
                        candidate[part].removeSubrange(start..<(start + size))
                        if tries(candidate) { shrunk = true } else { start += size }
                    }
                    size /= 2
                }
            }
        }
        return best
    }

    /// Each part as a Swift literal, or as hex when it is not valid UTF-8.
    static func describe(_ input: [[UInt8]]) -> String {
        "[" + input.map { part in
            if let text = String(validating: part, as: UTF8.self) { return FuzzInvariants.literal(text) }
            return "bytes(" + part.map { String($0, radix: 16) }.joined(separator: " ") + ")"
        }.joined(separator: ", ") + "]"
    }

    /// What `ResponseHead`'s readers get wrong about `head`: the subscript, Content-Length, Content-Range, each
    /// checked against its invariants and against the reference parsers.
    static func readerViolations(_ head: ResponseHead) -> [String] {
        var problems: [String] = []
        for name in head.headers.prefix(3).map({ $0.name }) + ["Content-Range", "CONTENT-length", "X-Absent"] {
            let expected = head.headers.first { FuzzInvariants.sameFieldName($0.name, name) }?.value
            if head[name] != expected { problems.append("head[\(FuzzInvariants.literal(name))] is not the first match") }
        }
        // The fields found when the head was made answer as a search by name does.
        let fields: [ResponseHead.Field] = [.contentLength, .contentRange, .contentType, .contentDisposition, .eTag,
                                            .lastModified, .acceptRanges, .retryAfter]
        for field in fields where head[field] != head[field.name] {
            problems.append("head[.\(field)] is not head[\(FuzzInvariants.literal(field.name))]")
        }
        let length = head.contentLength
        problems += FuzzInvariants.lengthViolations(length)
        // The reference: every Content-Length field, split at commas and trimmed of spaces and tabs, must be
        // 1*DIGIT within 63 bits, and all of them the same number; anything else frames nothing.
        var items: [Int64?] = []
        for field in head.headers where FuzzInvariants.sameFieldName(field.name, "Content-Length") {
            for item in field.value.split(separator: ",", omittingEmptySubsequences: false) {
                var bytes = Array(item.utf8)[...]
                while let first = bytes.first, first == 0x20 || first == 0x09 { bytes.removeFirst() }
                while let last = bytes.last, last == 0x20 || last == 0x09 { bytes.removeLast() }
                items.append(FuzzInvariants.strictDigits(bytes))
            }
        }
        var agreed: Int64?
        if let first = items.first, !items.contains(nil), items.allSatisfy({ $0 == first }) { agreed = first }
        if length != agreed {
            let shown = head["Content-Length"].map(FuzzInvariants.literal) ?? "nil"
            problems.append("Content-Length \(shown) read as \(length.map(String.init) ?? "nil")")
        }
        if (head.framingProblem != nil) != (!items.isEmpty && agreed == nil) {
            problems.append("framing problem \(head.framingProblem ?? "nil") for Content-Length fields \(items)")
        }
        let range = head.contentRange
        problems += FuzzInvariants.rangeViolations(range)
        let rangeValue = head["Content-Range"]
        let expected = rangeValue.flatMap(FuzzInvariants.strictContentRange)
        if range?.first != expected?.first || range?.last != expected?.last || range?.total != expected?.total {
            let shown = rangeValue.map(FuzzInvariants.literal) ?? "nil"
            problems.append("Content-Range \(shown) read as \(String(describing: range))")
        }
        return problems
    }
}

/// The seeds in fuzz/corpus/, shared with the libFuzzer harness.
enum FuzzCorpus {
    static let responseHeads = load("response-head")
    /// Each "VALUE\nURL".
    static let contentDispositions = load("content-disposition")

    static func load(_ target: String) -> [[UInt8]] {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../fuzz/corpus/\(target)").standardizedFileURL.path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory))?.sorted() ?? []
        let seeds = names.compactMap { FileManager.default.contents(atPath: directory + "/" + $0).map { Array($0) } }
        precondition(!seeds.isEmpty, "no seeds in \(directory)")
        return seeds
    }
}

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
