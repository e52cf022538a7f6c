import CGeneratedBytes

/// A deterministic pseudo-random binary file, generated on the fly from (name, offset): never held in memory.
///
/// The content is a stream of little-endian 64-bit words; word `i` is a splitmix64 mix of a seed derived from the
/// name and `i`, so any byte range can be produced independently and quickly, and two files with different names
/// differ everywhere.
public struct GeneratedFile: Sendable, Hashable {
    /// The name the file is served under, e.g. `medium.bin`.
    public let name: String
    /// The file's length in bytes.
    public let size: Int

    private let seed: UInt64

    /// Creates a file description. `size` must not be negative.
    public init(name: String, size: Int) {
        precondition(size >= 0, "a generated file cannot have a negative size")
        self.name = name
        self.size = size
        self.seed = StableHash.fnv1a(name)
    }

    /// The files the sample server serves by default: 1 MiB, 20 MiB, 200 MiB and 1 GiB.
    public static let standardSet: [GeneratedFile] = [
        GeneratedFile(name: "small.bin", size: 1 << 20),
        GeneratedFile(name: "medium.bin", size: 20 << 20),
        GeneratedFile(name: "large.bin", size: 200 << 20),
        GeneratedFile(name: "huge.bin", size: 1 << 30),
    ]

    /// Fills `buffer` with the file's bytes starting at `offset`.
    ///
    /// The whole buffer is filled, even past `size` (the sequence simply continues); callers clamp to the file.
    public func fill(_ buffer: UnsafeMutableRawBufferPointer, offset: Int) {
        precondition(offset >= 0, "offset must not be negative")
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        haul_generated_fill(seed, UInt64(offset), base.assumingMemoryBound(to: UInt8.self), buffer.count)
    }

    /// The file's bytes in `offset ..< offset + count`, clamped to the end of the file.
    public func bytes(offset: Int, count: Int) -> [UInt8] {
        precondition(offset >= 0 && count >= 0, "offset and count must not be negative")
        let available = Swift.max(0, Swift.min(count, size - offset))
        return [UInt8](unsafeUninitializedCapacity: available) { buffer, initialized in
            fill(UnsafeMutableRawBufferPointer(buffer), offset: offset)
            initialized = available
        }
    }
}
