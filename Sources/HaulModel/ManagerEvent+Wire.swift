import FoundationEssentials

/// The events on the control API's socket (`GET /v1/events`, docs/protocol.md): each a flat JSON object,
/// `event` naming its kind, `id` the download, and the fields of that kind (absent when unknown). Written by
/// `json()`, read by `init(from:)`: the service sends the engine's events as they are and its clients read them
/// into the same type.
///
/// Versioned by `wireVersion` (the control API's `protocolVersion`). Within a version, new fields and new kinds
/// may appear: a reader skips fields it does not know, and an event of a kind it does not know is
/// `UnknownKind`, which a client skips. Anything else a client relies on changing raises the version.
extension ManagerEvent: Decodable {
    /// The version of this form; a client compares it with the service's `protocolVersion` when it connects.
    package static let wireVersion = 1

    /// An event of a kind this version does not know (a newer service's): skipped.
    package struct UnknownKind: Error, Equatable {
        package let kind: String

        package init(kind: String) {
            self.kind = kind
        }
    }

    enum Key: String, CodingKey {
        case event, id, url, file, path, part, total, state, error, completed, batch, rate, fact, sources, bytes, skipped,
            seconds, position
    }

    /// The kind's name on the wire.
    package var kind: String {
        switch self {
        case .added: "added"
        case .state: "state"
        case .started: "started"
        case .progress: "progress"
        case .fact: "fact"
        case .sources: "sources"
        case .finished: "finished"
        case .removed: "removed"
        case .moved: "moved"
        }
    }

    /// Reads the keys its kind carries, not all of them: a key looked for and not there costs the decoder as much
    /// as one that is (a screen decodes every event of every download it shows).
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        let kind = try container.decode(String.self, forKey: .event)
        let id = try container.decode(DownloadID.self, forKey: .id)
        func read<T: Decodable>(_ key: Key) throws -> T? { try container.decodeIfPresent(T.self, forKey: key) }
        switch kind {
        case "added":
            self = .added(id: id, url: try read(.url) ?? "", file: try read(.file) ?? "")
        case "state":
            let name: String = try container.decode(String.self, forKey: .state)
            guard let state = DownloadState(name: name, error: try read(.error)) else {
                throw DecodingError.dataCorruptedError(forKey: .state, in: container, debugDescription: "no state \(name)")
            }
            self = .state(id: id, state)
        case "started":
            self = .started(id: id, file: try read(.file) ?? "", path: try read(.path) ?? "", total: try read(.total),
                            part: try read(.part))
        case "progress":
            self = .progress(id: id, DownloadProgress(completed: try read(.completed) ?? 0, batchBytes: try read(.batch) ?? 0,
                                                      total: try read(.total), bytesPerSecond: try read(.rate) ?? 0))
        case "fact":
            self = .fact(id: id, try container.decode(DownloadFact.self, forKey: .fact))
        case "sources":
            self = .sources(id: id, try read(.sources) ?? [])
        case "finished":
            let result = DownloadResult(file: try read(.file) ?? "", path: try read(.path) ?? "",
                                        bytes: try read(.bytes) ?? 0, skipped: try read(.skipped) ?? false)
            self = .finished(id: id, result, seconds: try read(.seconds) ?? 0)
        case "removed":
            self = .removed(id: id)
        case "moved":
            self = .moved(id: id, position: try container.decode(Int.self, forKey: .position))
        default:
            throw UnknownKind(kind: kind)
        }
    }

    /// The event as one compact JSON object, its keys sorted (as `JSONEncoder`'s `.sortedKeys` writes them).
    ///
    /// Written here rather than by `JSONEncoder`: every attached client gets every event of every download,
    /// and the encoder took about 5 us an event (1000 small files from `haul add` to a service with one client
    /// attached: 455 and 415 ms of its CPU against 505 and 430, two sets of 12 alternating rounds). The nested
    /// objects (a failure, a fact) are their own `Codable` form, from `nested`.
    func json(nested: (any Encodable) -> [UInt8]) -> [UInt8] {
        var object = JSONObjectWriter()
        switch self {
        case .added(let id, let url, let file):
            object.string("event", "added")
            object.string("file", file)
            object.integer("id", Int64(id))
            object.string("url", url)
        case .state(let id, let state):
            if let error = state.error { object.raw("error", nested(error)) }
            object.string("event", "state")
            object.integer("id", Int64(id))
            object.string("state", state.name)
        case .started(let id, let file, let path, let total, let part):
            object.string("event", "started")
            object.string("file", file)
            object.integer("id", Int64(id))
            object.string("part", part)
            object.string("path", path)
            object.integer("total", total)
        case .progress(let id, let progress):
            object.integer("batch", progress.batchBytes)
            object.integer("completed", progress.completed)
            object.string("event", "progress")
            object.integer("id", Int64(id))
            object.double("rate", progress.bytesPerSecond)
            object.integer("total", progress.total)
        case .fact(let id, let fact):
            object.string("event", "fact")
            object.raw("fact", nested(fact))
            object.integer("id", Int64(id))
        case .sources(let id, let sources):
            object.string("event", "sources")
            object.integer("id", Int64(id))
            object.raw("sources", nested(sources))
        case .finished(let id, let result, let seconds):
            object.integer("bytes", result.bytes)
            object.string("event", "finished")
            object.string("file", result.file)
            object.integer("id", Int64(id))
            object.string("path", result.path)
            object.double("seconds", seconds)
            object.bool("skipped", result.skipped)
        case .removed(let id):
            object.string("event", "removed")
            object.integer("id", Int64(id))
        case .moved(let id, let position):
            object.string("event", "moved")
            object.integer("id", Int64(id))
            object.integer("position", Int64(position))
        }
        return object.finish()
    }

    /// `json(nested:)` with the nested objects written by a `JSONEncoder` with sorted keys.
    package func json(with encoder: JSONEncoder) -> [UInt8] {
        json { value in (try? encoder.encode(value)).map { Array($0) } ?? Array("null".utf8) }
    }
}

/// One JSON object written key by key, in the order given.
struct JSONObjectWriter {
    private var out: [UInt8] = []
    private var first = true

    init() {
        out.reserveCapacity(128)
    }

    private mutating func key(_ name: StaticString) {
        out.append(first ? UInt8(ascii: "{") : UInt8(ascii: ","))
        first = false
        out.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { out.append(contentsOf: $0) }
        out.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
    }

    mutating func integer(_ name: StaticString, _ value: Int64?) {
        guard let value else { return }
        key(name)
        out.append(contentsOf: String(value).utf8)
    }

    /// As `JSONEncoder` writes a number: a whole one without its ".0"; one JSON cannot hold (infinite, not a
    /// number) as `null`.
    mutating func double(_ name: StaticString, _ value: Double?) {
        guard let value else { return }
        key(name)
        guard value.isFinite else {
            out.append(contentsOf: "null".utf8)
            return
        }
        let text = value.description
        out.append(contentsOf: (text.hasSuffix(".0") ? text.dropLast(2) : Substring(text)).utf8)
    }

    mutating func bool(_ name: StaticString, _ value: Bool) {
        key(name)
        out.append(contentsOf: (value ? "true" : "false").utf8)
    }

    mutating func string(_ name: StaticString, _ value: String?) {
        guard let value else { return }
        key(name)
        JSONText.write(string: value, to: &out)
    }

    /// A value already written as JSON.
    mutating func raw(_ name: StaticString, _ json: [UInt8]) {
        key(name)
        out.append(contentsOf: json)
    }

    consuming func finish() -> [UInt8] {
        if first { out.append(UInt8(ascii: "{")) }
        out.append(UInt8(ascii: "}"))
        return out
    }
}

/// JSON's text.
package enum JSONText {
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// `string` as a JSON string: quoted, with `"`, `\` and the control characters escaped (and nothing else:
    /// `/` and every other character as they are).
    package static func write(string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20, 0x7F:
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                        hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
