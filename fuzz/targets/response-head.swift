import Foundation

// libFuzzer target: the input is a response head as curl hands it over, one `Builder.add(line:)` per line
// (each with its LF). Reads every header back, Content-Length, Content-Range and Retry-After, and traps when
// an answer breaks a promise (FuzzInvariants.swift) or differs from the reference parsers there.
// Built and run by fuzz/run, with ResponseHead.swift, HTTPStatus.swift and HaulError.swift compiled in.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzResponseHead(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    var builder = ResponseHead.Builder()
    var start = 0
    while start < size {
        let end = bytes[start...].firstIndex(of: 0x0A).map { $0 + 1 } ?? size
        builder.add(line: UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
        start = end
    }
    require(FuzzInvariants.headerViolations(builder.lines), "header lines")

    let head = ResponseHead(status: 206, headers: builder.lines, effectiveURL: "")
    for name in head.headers.map(\.name) + ["content-range", "CONTENT-LENGTH", "X-Absent"] {
        let expected = head.headers.first { FuzzInvariants.sameFieldName($0.name, name) }?.value
        require(head[name] == expected ? [] : ["not the first match"], "head[\(FuzzInvariants.literal(name))]")
    }

    let length = head.contentLength
    require(FuzzInvariants.lengthViolations(length), "Content-Length")
    let lengthValue = head["Content-Length"]
    require(length == lengthValue.flatMap { FuzzInvariants.strictDigits($0.utf8) } ? [] : ["differs from 1*DIGIT"],
            "Content-Length \(lengthValue.map(FuzzInvariants.literal) ?? "nil")")

    let range = head.contentRange
    require(FuzzInvariants.rangeViolations(range), "Content-Range")
    let rangeValue = head["Content-Range"]
    let expected = rangeValue.flatMap(FuzzInvariants.strictContentRange)
    let same = range?.first == expected?.first && range?.last == expected?.last && range?.total == expected?.total
    require(same ? [] : ["read as \(String(describing: range))"],
            "Content-Range \(rangeValue.map(FuzzInvariants.literal) ?? "nil")")

    let delay = HTTPStatus.retryAfter(head["Retry-After"], now: Date(timeIntervalSince1970: 1_795_000_000))
    require((delay ?? .zero) < .zero ? ["negative delay"] : [], "Retry-After")
    return 0
}

/// Traps with what went wrong, which libFuzzer reports as a crash and saves the input of.
func require(_ problems: [String], _ what: @autoclosure () -> String) {
    if !problems.isEmpty { fatalError("\(what()): \(problems.joined(separator: "; "))") }
}
