/// The C libraries the screen and the pictures use are loaded when first used (Sources/CLoadOnUse): what
/// one that cannot be loaded says, so that the screen falls back with that reason and a picture fails with
/// it instead of looking damaged.
enum LoadedLibrary {
    /// nil when `load` (a library's `haul_*_load`) loaded it, else its one-line failure
    /// ("cannot load libjpeg.so.62: ...").
    static func failure(_ load: (UnsafeMutablePointer<CChar>?, Int) -> Int32) -> String? {
        var message = [CChar](repeating: 0, count: 600)
        guard load(&message, message.count) != 0 else { return nil }
        let bytes = message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }
}
