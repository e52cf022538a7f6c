import Glibc
import HaulCore

/// Reads `-i FILE`: one URL per line, blank lines and `#` comments skipped, `-` for stdin.
///
/// Read with `read(2)` in chunks and split into lines as it goes, so a FIFO (`-i <(command)`) and stdin
/// work, and memory holds the URLs found plus one chunk and one unfinished line, whatever the input: a
/// line longer than `maxLineBytes` (`-i /dev/zero`) is refused as soon as it is that long, and a directory
/// is refused before reading.
enum InputFile {
    /// The longest line taken, `\r\n` excluded: far longer than any URL a server accepts.
    static let maxLineBytes = 65536
    static let chunkBytes = 65536

    static func urls(from path: String) -> Result<[String], HaulError> {
        let fd: Int32
        if path == "-" {
            fd = 0
        } else {
            // Blocks on a FIFO until its writer opens it, as `-i <(command)` needs.
            fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return .failure(unreadable(path, errno)) }
        }
        defer { if fd != 0 { close(fd) } }
        var info = stat()
        if fstat(fd, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR {
            return .failure(unreadable(path, EISDIR))
        }
        var lines = LineSplitter(maxLineBytes: maxLineBytes)
        var chunk = [UInt8](repeating: 0, count: chunkBytes)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(unreadable(path, errno))
            }
            if count == 0 { break }
            if let tooLong = lines.add(chunk[..<count]) { return .failure(tooLongLine(tooLong)) }
        }
        if let tooLong = lines.finish() { return .failure(tooLongLine(tooLong)) }
        return .success(lines.urls)
    }

    private static func unreadable(_ path: String, _ code: Int32) -> HaulError {
        let reason = code == EISDIR ? "is a directory" : String(cString: strerror(code))
        return HaulError(.fileIO, "cannot read the input file \(path): \(reason)")
    }

    private static func tooLongLine(_ number: Int) -> HaulError {
        HaulError(.usage, "line \(number) is longer than \(maxLineBytes) bytes")
    }
}

/// Splits bytes into lines as they come and keeps the URLs among them: only the unfinished last line is
/// held, never more than `maxLineBytes` of it.
struct LineSplitter {
    let maxLineBytes: Int
    private(set) var urls: [String] = []
    private var pending: [UInt8] = []
    private var lineNumber = 1

    init(maxLineBytes: Int) {
        self.maxLineBytes = maxLineBytes
    }

    /// Takes the next bytes; returns the number of a line that is too long, if one is.
    mutating func add(_ bytes: ArraySlice<UInt8>) -> Int? {
        var start = bytes.startIndex
        while let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) {
            if pending.count + (newline - start) > maxLineBytes + 1 { return lineNumber }
            pending += bytes[start..<newline]
            if let tooLong = endLine() { return tooLong }
            start = newline + 1
        }
        pending += bytes[start...]
        // One byte of slack: the `\r` of a CRLF line may arrive before its `\n`.
        return pending.count > maxLineBytes + 1 ? lineNumber : nil
    }

    /// The input has ended: the last line may lack its newline.
    mutating func finish() -> Int? {
        pending.isEmpty ? nil : endLine()
    }

    private mutating func endLine() -> Int? {
        if pending.last == UInt8(ascii: "\r") { pending.removeLast() }
        if pending.count > maxLineBytes { return lineNumber }
        var line = Substring(String(decoding: pending, as: UTF8.self))
        while line.first?.isWhitespace == true { line.removeFirst() }
        while line.last?.isWhitespace == true { line.removeLast() }
        if !line.isEmpty && !line.hasPrefix("#") { urls.append(String(line)) }
        pending.removeAll(keepingCapacity: true)
        lineNumber += 1
        return nil
    }
}
