/// Addresses on a SuperStorage-API server.
enum FilesAddress {
    static func list(server: String) -> String { trimmed(server) + "/files/list" }
    static func status(server: String) -> String { trimmed(server) + "/files/status" }

    /// `SERVER/files/download?NAME`, the name percent-encoded (all but RFC 3986 unreserved characters).
    static func download(server: String, name: String) -> String {
        var encoded = ""
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                encoded += byte < 16 ? "%0\(hex)" : "%\(hex)"
            }
        }
        return trimmed(server) + "/files/download?" + encoded
    }

    private static func trimmed(_ server: String) -> String {
        var base = server
        while base.hasSuffix("/") { base.removeLast() }
        return base
    }
}
