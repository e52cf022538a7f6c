/// aria2's name for a download: 16 lower-case hex digits (64 random bits), stored with the download.
enum GID {
    static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        let value = generator.next() as UInt64
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// 16 hex digits (either case), as a client may send a `gid` option.
    static func isValid(_ text: String) -> Bool {
        text.utf8.count == 16 && text.utf8.allSatisfy(isHexDigit)
    }

    /// A prefix a client may use instead of the whole GID (aria2 accepts a unique one).
    static func isPrefix(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 16 && text.utf8.allSatisfy(isHexDigit)
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte) || (0x41...0x46).contains(byte)
    }
}
