import HaulCore
import Foundation

/// A JSON value as JSON-RPC carries it. Parsed with Foundation's decoder; written by `write(to:)`, which
/// keeps an object's keys in the order given (aria2's replies are read by people too) and never fails.
///
/// An integer stays an integer and a fraction a double, so a request's `id` is echoed in its own type; an
/// integer past 64 bits keeps its digits (up to 38 of them), never rounded through a double.
enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    /// An integer outside `Int64`'s range, as its decimal digits (a leading `-` for a negative one).
    case bigInteger(String)
    case double(Double)
    case string(String)
    case array([JSON])
    /// Keys in order; a key appears once.
    case object([(String, JSON)])

    static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.int(let a), .int(let b)): a == b
        case (.bigInteger(let a), .bigInteger(let b)): a == b
        case (.double(let a), .double(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// The value of `key` in an object; nil for a missing key or another kind of value.
    subscript(key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    var array: [JSON]? {
        if case .array(let value) = self { return value }
        return nil
    }

    var members: [(String, JSON)]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// An integer given as a number or, as aria2's clients often send it, as a string of digits.
    var integer: Int64? {
        switch self {
        case .int(let value): value
        case .double(let value) where value.rounded() == value && abs(value) < 9e15: Int64(value)
        case .string(let text): Int64(text.trimmingCharacters(in: .whitespaces))
        default: nil
        }
    }

    // MARK: reading

    /// Parses one JSON document; nil when it is not valid JSON.
    static func parse(_ bytes: some Collection<UInt8>) -> JSON? {
        try? JSONDecoder().decode(JSON.self, from: Data(bytes))
    }

    // MARK: writing

    /// The compact text of this value.
    var text: String {
        var bytes: [UInt8] = []
        write(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
        case .int(let value): out.append(contentsOf: String(value).utf8)
        case .bigInteger(let digits): out.append(contentsOf: digits.utf8)
        case .double(let value):
            // JSON has no NaN or infinity.
            out.append(contentsOf: (value.isFinite ? "\(value)" : "null").utf8)
        case .string(let value): Self.write(string: value, to: &out)
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                value.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.write(string: key, to: &out)
                out.append(UInt8(ascii: ":"))
                value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A JSON string: quote, backslash and control characters escaped, the rest as UTF-8.
    static func write(string: String, to out: inout [UInt8]) {
        JSONText.write(string: string, to: &out)
    }
}

extension JSON: Decodable {
    private struct MemberKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        if var list = try? decoder.unkeyedContainer() {
            var values: [JSON] = []
            while !list.isAtEnd { values.append(try list.decode(JSON.self)) }
            self = .array(values)
            return
        }
        if let object = try? decoder.container(keyedBy: MemberKey.self) {
            var members: [(String, JSON)] = []
            var seen = Set<String>()
            for key in object.allKeys where seen.insert(key.stringValue).inserted {
                members.append((key.stringValue, try object.decode(JSON.self, forKey: key)))
            }
            self = .object(members)
            return
        }
        let value = try decoder.singleValueContainer()
        if value.decodeNil() {
            self = .null
        } else if let bool = try? value.decode(Bool.self) {
            self = .bool(bool)
        } else if let int = try? value.decode(Int64.self) {
            self = .int(int)
        } else if let decimal = try? value.decode(Decimal.self), let digits = Self.wholeDigits(decimal) {
            self = .bigInteger(digits)
        } else if let double = try? value.decode(Double.self) {
            self = .double(double)
        } else {
            self = .string(try value.decode(String.self))
        }
    }
}

extension JSON {
    /// A whole number's digits, as JSON writes an integer; nil for a fraction or a number that is not finite.
    static func wholeDigits(_ decimal: Decimal) -> String? {
        guard decimal.isFinite else { return nil }
        let text = decimal.description
        let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        return !digits.isEmpty && digits.allSatisfy({ $0.isASCII && $0.isNumber }) ? text : nil
    }
}

/// Building replies: `["gid": .string(g), ...]` keeps the order written.
extension JSON: ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    typealias Key = String
    typealias Value = JSON

    init(stringLiteral value: String) { self = .string(value) }
    init(arrayLiteral elements: JSON...) { self = .array(elements) }
    init(dictionaryLiteral elements: (String, JSON)...) { self = .object(elements) }

    /// aria2 sends every number as a string.
    static func number(_ value: some BinaryInteger) -> JSON { .string(String(value)) }
}
