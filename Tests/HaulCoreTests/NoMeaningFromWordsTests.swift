import Foundation
import Testing

/// No code reads meaning out of an error's words: what tells failures apart is the category and the typed
/// `FailureReason`. A grep over Sources for a message (or a reason, a detail, an answer) searched, compared
/// or cut, with the few lines that do something else named and explained.
@Suite struct NoMeaningFromWordsTests {
    /// `message`, `description`, `reason`, `detail`, `error`, `answer`, ... followed by a search
    /// (`contains`, `hasPrefix`, `hasSuffix`, `starts`, `range`, `firstRange`, `firstIndex`) or a cut
    /// (`replacing`), possibly after `lowercased()`; or a message compared with `==`/`!=`.
    static let pattern = #"(message|description|why|problem|failure|reason|error|detail|answer)(\(\))?\??\.(lowercased\(\)\.)?(contains|hasPrefix|hasSuffix|starts|range|firstRange|replacing|firstIndex)\(|\.message *(==|!=)|(==|!=) *[A-Za-z_.]*\.message\b"#

    /// Lines that match and read no meaning from a message, each with why.
    static let allowed: [(file: String, text: String)] = [
        // JSON-RPC's failure equality: compares two failures, field by field.
        ("Sources/HaulService/RPC/JSONRPC.swift", "a.code == b.code && a.message == b.message"),
        // The service's log: one line per failure while it repeats, the words being what is logged.
        ("Sources/HaulService/Service/ServiceRunner.swift", "if failure != error.message"),
        // libcurl's own error buffer, at the edge where the error is made: libcurl 7 reports a malformed
        // answer and a reset connection with one code (`CURLE_RECV_ERROR`) and tells them apart only in words.
        ("Sources/HaulCore/Transport/CurlError.swift", #"detail.hasSuffix(" in chunked-encoding")"#),
        // The readiness pipe's framing ("1" ready, "0" another service runs, "!" and a reason): the first
        // byte is the protocol.
        ("Sources/HaulServiceClient/ServiceLauncher.swift", #"answer.hasPrefix("!")"#),
    ]

    @Test func noSourceReadsMeaningFromAMessage() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let regex = try Regex(Self.pattern)
        var found: [String] = []
        let sources = root.appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        #expect(files.count > 100, "the sources are found")
        for file in files {
            let relative = "Sources/" + file.path.dropFirst(sources.path.count + 1)
            let text = try String(contentsOf: file, encoding: .utf8)
            for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.contains(regex) {
                let trimmed = line.drop { $0 == " " }
                if trimmed.hasPrefix("//") { continue }
                if Self.allowed.contains(where: { $0.file == relative && line.contains($0.text) }) { continue }
                found.append("\(relative):\(index + 1): \(trimmed)")
            }
        }
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }
}
