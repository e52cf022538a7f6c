import FoundationEssentials
import Glibc

/// Which pieces of a file on disk do not match a metalink's piece hashes (`PieceHashes`). Streams the file
/// piece by piece through one buffer of at most 1 MiB, whatever the piece length, so memory stays bounded.
///
/// The engine calls it on the finished part (before the rename, where the whole-file hash is checked) or on a
/// range it has just completed: a bad piece's range is fetched again from another source, and the source that
/// sent it is dropped.
package enum PieceCheck {
    /// The indices of the bad pieces of the file at `path`, in order: those whose bytes hash otherwise, and
    /// those the file is too short to hold. `size` is the file's expected size when known (the pieces past it
    /// are not checked); without it the file's own size is used.
    package static func badPieces(path: String, pieces: PieceHashes, size: Int64? = nil) throws(HaulError) -> [Int] {
        guard pieces.length > 0 else { return Array(pieces.hashes.indices) }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw PartFile.error("cannot read", path) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw PartFile.error("cannot read", path) }
        let onDisk = Int64(info.st_size)
        let total = size ?? onDisk
        var buffer = [UInt8](repeating: 0, count: Int(min(pieces.length, 1 << 20)))
        var bad: [Int] = []
        for (index, expected) in pieces.hashes.enumerated() {
            let range = pieces.range(of: index, size: total)
            // A piece the file is too short for is bad; one past the expected size has nothing to check.
            if range.isEmpty {
                if Int64(index) * pieces.length < total { bad.append(index) }
                continue
            }
            guard range.upperBound <= onDisk else {
                bad.append(index)
                continue
            }
            guard let context = DigestContext(pieces.algorithm) else { throw DigestContext.unavailable(pieces.algorithm) }
            var offset = range.lowerBound
            while offset < range.upperBound {
                let want = Int(min(Int64(buffer.count), range.upperBound - offset))
                let read = buffer.withUnsafeMutableBytes { all in
                    Result { () throws(SystemError) in
                        try FileIO.readFully(fd, into: UnsafeMutableRawBufferPointer(rebasing: all[..<want]), at: offset)
                    }
                }
                let n: Int
                switch read {
                case .success(let count): n = count
                case .failure(let error): throw PartFile.error("cannot read", path, error.code)
                }
                guard n == want else { break }
                buffer.withUnsafeBytes { context.update(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
                offset += Int64(n)
            }
            if offset < range.upperBound || context.hex() != expected { bad.append(index) }
        }
        return bad
    }
}
