import Foundation
import Testing
import TestSupport
@testable import HaulCore

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
