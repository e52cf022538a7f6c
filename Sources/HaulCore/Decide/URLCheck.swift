import FoundationEssentials
import Glibc

/// Refuses what is not a URL haul can download before any connection is made.
package enum URLCheck {
    /// HTTP's, and FTP's, FTPS's (TLS from the start), SFTP's and SCP's through libcurl.
    static let supportedSchemes: Set<String> = ["http", "https", "ftp", "ftps", "sftp", "scp"]

    /// nil when `text` is a usable http, https, ftp, ftps, sftp or scp URL; otherwise the reason, for a usage
    /// error.
    package static func problem(with text: String) -> String? {
        // Most URLs are plain ASCII with nothing to decode: taken at a glance (a few hundred instructions,
        // where `URLComponents` took 6,000 for each download).
        if isPlainlyValid(text) { return nil }
        return problemByParsing(text)
    }

    /// The whole check, through `URLComponents`: what `problem(with:)` says of anything `isPlainlyValid` does
    /// not take.
    static func problemByParsing(_ text: String) -> String? {
        guard !text.isEmpty else { return "empty URL" }
        guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
            return "URL contains spaces or control characters"
        }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            return "not a valid URL"
        }
        guard supportedSchemes.contains(scheme) else { return "unsupported URL scheme \"\(scheme)\"" }
        // As written (`encodedHost`): `host` would decode an IDNA name through ICU for every download only
        // to see that it is not empty.
        guard let host = components.encodedHost, !host.isEmpty else { return "URL has no host" }
        // libcurl refuses a port past 16 bits as "URL using bad/illegal format" and one of 0 cannot connect:
        // said here, the user's URL is a usage error, not the protocol error a redirect to it would be.
        if let port = components.port, !(1...65535).contains(port) { return "port \(port) is not from 1 to 65535" }
        return nil
    }

    /// Whether `text` is, byte for byte, an RFC 3986 URI that `problemByParsing` accepts: `http://` or
    /// `https://` (the scheme in any case), a host of unreserved and sub-delimiter characters that is not empty,
    /// a port of digits from 1 to 65535 or none, then a path, query and fragment of their allowed characters. False for
    /// everything else, which may still be valid (a user name, a percent sign, an IPv6 address, a name that is
    /// not ASCII): the parse decides those.
    static func isPlainlyValid(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var at: Int
            if bytes.count > 7, lower(bytes[0]) == ascii("h"), lower(bytes[1]) == ascii("t"),
                lower(bytes[2]) == ascii("t"), lower(bytes[3]) == ascii("p")
            {
                at = lower(bytes[4]) == ascii("s") ? 5 : 4
            } else {
                return false
            }
            guard at + 3 <= bytes.count, bytes[at] == ascii(":"), bytes[at + 1] == ascii("/"),
                bytes[at + 2] == ascii("/")
            else { return false }
            at += 3
            // The authority: a host, then maybe `:` and a port.
            let hostStart = at
            var colon: Int?
            var port = 0
            while at < bytes.count {
                let byte = bytes[at]
                if byte == ascii("/") || byte == ascii("?") || byte == ascii("#") { break }
                if byte == ascii(":") {
                    guard colon == nil else { return false }
                    colon = at
                } else if let colon, at > colon {
                    guard byte >= ascii("0"), byte <= ascii("9") else { return false }
                    port = port * 10 + Int(byte - ascii("0"))
                    guard port <= 65535 else { return false }
                } else {
                    guard isUnreservedOrSubDelimiter(byte) else { return false }
                }
                at += 1
            }
            let hostEnd = colon ?? at
            guard hostEnd > hostStart else { return false }
            if let colon, colon + 1 == at || port == 0 { return false }
            // The path, the query and at most one fragment.
            var fragment = false
            while at < bytes.count {
                let byte = bytes[at]
                if byte == ascii("#") {
                    guard !fragment else { return false }
                    fragment = true
                } else if !(isUnreservedOrSubDelimiter(byte) || byte == ascii(":") || byte == ascii("@")
                    || byte == ascii("/") || byte == ascii("?"))
                {
                    return false
                }
                at += 1
            }
            return true
        }
    }

    private static func ascii(_ character: Unicode.Scalar) -> UInt8 { UInt8(ascii: character) }

    private static func lower(_ byte: UInt8) -> UInt8 {
        byte >= ascii("A") && byte <= ascii("Z") ? byte | 0x20 : byte
    }

    /// RFC 3986's unreserved (letters, digits, `-._~`) and sub-delims (`!$&'()*+,;=`).
    private static func isUnreservedOrSubDelimiter(_ byte: UInt8) -> Bool {
        switch byte {
        case ascii("a")...ascii("z"), ascii("A")...ascii("Z"), ascii("0")...ascii("9"),
            ascii("-"), ascii("."), ascii("_"), ascii("~"),
            ascii("!"), ascii("$"), ascii("&"), ascii("'"), ascii("("), ascii(")"), ascii("*"), ascii("+"),
            ascii(","), ascii(";"), ascii("="):
            true
        default: false
        }
    }
}
