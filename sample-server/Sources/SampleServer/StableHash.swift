/// FNV-1a over UTF-8: a hash that is stable across runs, processes and platforms, unlike `Hasher`.
enum StableHash {
    static func fnv1a(_ text: String, into hash: UInt64 = 0xCBF2_9CE4_8422_2325) -> UInt64 {
        var hash = hash
        for byte in text.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        return hash
    }
}
