/// A file's piece hashes (a metalink's `<pieces>`): the file cut into pieces of `length` bytes (the last one
/// shorter), each with its digest. The engine checks a piece as it completes and fetches a bad one again from
/// another source (`PieceCheck` finds the bad pieces of a file on disk).
package struct PieceHashes: Sendable, Equatable, Codable {
    package var algorithm: DigestAlgorithm
    /// Bytes in each piece but the last, more than 0.
    package var length: Int64
    /// Lower-case hex, one per piece in file order.
    package var hashes: [String]

    package init(algorithm: DigestAlgorithm, length: Int64, hashes: [String]) {
        self.algorithm = algorithm
        self.length = length
        self.hashes = hashes
    }

    /// The byte range of piece `index` in a file of `size` bytes (the last piece ends at the file's end).
    package func range(of index: Int, size: Int64) -> Range<Int64> {
        let start = Int64(index) * length
        return start..<min(size, start + length)
    }
}
