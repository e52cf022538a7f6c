/// RFC 6266's grammar for `Content-Disposition`, over the header's Unicode scalars.
enum ContentDisposition {
    struct Parameter {
        var name: String
        var value: String
        /// Written as a quoted string (`filename*` may not be).
        var quoted: Bool
    }

    /// The parameters after the disposition type, nil when the header is not valid syntax.
    static func parameters(of header: String) -> [Parameter]? {
        let text = Array(header.unicodeScalars)
        var index = 0
        func skipSpace() {
            while index < text.count, text[index] == " " || text[index] == "\t" { index += 1 }
        }
        func token() -> String? {
            let start = index
            while index < text.count, isTokenCharacter(text[index]) { index += 1 }
            guard index > start else { return nil }
            return String(String.UnicodeScalarView(text[start..<index]))
        }
        skipSpace()
        guard token() != nil else { return nil }  // the disposition type
        var result: [Parameter] = []
        var names = Set<String>()
        skipSpace()
        while index < text.count {
            guard text[index] == ";" else { return nil }
            index += 1
            skipSpace()
            if index == text.count { break }  // a trailing `;`
            guard let name = token() else { return nil }
            skipSpace()
            guard index < text.count, text[index] == "=" else { return nil }
            index += 1
            skipSpace()
            var parameter = Parameter(name: name, value: "", quoted: false)
            if index < text.count, text[index] == "\"" {
                index += 1
                var value = String.UnicodeScalarView()
                var closed = false
                while index < text.count {
                    let scalar = text[index]
                    index += 1
                    if scalar == "\"" {
                        closed = true
                        break
                    }
                    if scalar == "\\" {
                        guard index < text.count else { return nil }
                        value.append(text[index])
                        index += 1
                    } else {
                        guard scalar == "\t" || scalar.value >= 0x20, scalar.value != 0x7F else { return nil }
                        value.append(scalar)
                    }
                }
                guard closed else { return nil }
                parameter.value = String(value)
                parameter.quoted = true
            } else {
                guard let value = token() else { return nil }
                parameter.value = value
            }
            // A parameter named twice (two `filename`s): which one the server meant is anyone's guess.
            guard names.insert(name.lowercased()).inserted else { return nil }
            result.append(parameter)
            skipSpace()
        }
        return result
    }

    /// `filename*`'s value (RFC 8187 `charset'language'value-chars`), decoded; nil when it cannot be.
    static func extendedValue(_ value: String) -> String? {
        let pieces = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard pieces.count == 3 else { return nil }
        var bytes: [UInt8] = []
        var encoded = Array(pieces[2].utf8)[...]
        while let byte = encoded.popFirst() {
            if byte == UInt8(ascii: "%") {
                guard encoded.count >= 2, let high = encoded.removeFirst().hexDigitValue,
                    let low = encoded.removeFirst().hexDigitValue
                else { return nil }
                bytes.append(high << 4 | low)
            } else {
                guard isAttributeCharacter(byte) else { return nil }
                bytes.append(byte)
            }
        }
        switch pieces[0].lowercased() {
        case "utf-8": return String(validating: bytes, as: UTF8.self)
        case "iso-8859-1":
            // Its graphic characters only: a byte of C0, DEL or C1 (0x80-0x9F) is no ISO-8859-1 text, and such
            // bytes are most often UTF-8 sent under the wrong label (tc2231's `attwithfn2231utf8-bad`:
            // `%e2%82%ac`, the euro sign's UTF-8, holds 0x82).
            guard bytes.allSatisfy({ (0x20..<0x7F).contains($0) || $0 >= 0xA0 }) else { return nil }
            return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        default: return nil
        }
    }

    /// RFC 9110's `tchar`.
    static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        guard scalar.isASCII else { return false }
        switch UInt8(scalar.value) {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case let byte:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// RFC 8187's `attr-char`: a token character other than `%`, `'` and `*`.
    static func isAttributeCharacter(_ byte: UInt8) -> Bool {
        byte != UInt8(ascii: "%") && byte != UInt8(ascii: "'") && byte != UInt8(ascii: "*")
            && isTokenCharacter(Unicode.Scalar(byte))
    }
}
