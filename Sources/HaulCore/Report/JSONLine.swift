/// Builds one JSON object, keys in the order added.
struct JSONLine {
    private var fields: [String] = []

    var text: String { "{" + fields.joined(separator: ",") + "}" }

    func add(_ key: String, _ value: String) -> JSONLine {
        adding(key, Self.quote(value))
    }

    func add(_ key: String, _ value: Int64?) -> JSONLine {
        adding(key, value.map(String.init) ?? "null")
    }

    func add(_ key: String, _ value: Int) -> JSONLine {
        add(key, Int64(value))
    }

    func add(_ key: String, _ value: Double) -> JSONLine {
        adding(key, value.isFinite ? ByteFormat.fixed(value, 3) : "null")
    }

    /// `json` must be one JSON value.
    func adding(_ key: String, _ json: String) -> JSONLine {
        var copy = self
        copy.fields.append("\(Self.quote(key)):\(json)")
        return copy
    }

    static func quote(_ string: String) -> String {
        var result = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            // What `TextOutput` would escape, escaped here as JSON so the line stays valid JSON.
            case _ where TextOutput.needsEscape(scalar):
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
