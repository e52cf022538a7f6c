import CLinux
import FoundationEssentials
import Glibc
import HaulCore

/// Reads `-i FILE`: one URL per line, blank lines and `#` comments skipped, `-` for stdin. As in aria2's
/// input files, the indented `key=value` lines under a URL are options of that download alone (`out=`,
/// `dir=`, `segments=`, `sequential=`, `header=`, `checksum=`, `limit-rate=`, `user-agent=`, `referer=`), and the URLs of one
/// line, separated by tabs, are the sources of one download (aria2 lists a download's mirrors so).
///
/// Read with `read(2)` in chunks and split into lines as it goes, so a FIFO (`-i <(command)`) and stdin
/// work, and memory holds the URLs found plus one chunk and one unfinished line, whatever the input: a
/// line longer than `maxLineBytes` (`-i /dev/zero`) is refused as soon as it is that long, and a directory
/// is refused before reading.
enum InputFile {
    /// The longest line taken, `\r\n` excluded: far longer than any URL a server accepts.
    static let maxLineBytes = 65536
    static let chunkBytes = 65536

    static func entries(from path: String) -> Result<[InputEntry], HaulError> {
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
            let count: Int
            do {
                count = try FileIO.read(fd, into: &chunk)
            } catch {
                return .failure(unreadable(path, error.code))
            }
            if count == 0 { break }
            if let problem = lines.add(chunk[..<count]) { return .failure(problem) }
        }
        if let problem = lines.finish() { return .failure(problem) }
        return .success(lines.entries)
    }

    private static func unreadable(_ path: String, _ code: Int32) -> HaulError {
        let reason = code == EISDIR ? "is a directory" : String(cString: strerror(code))
        return HaulError(.fileIO, "cannot read the input file \(path): \(reason)")
    }

}

/// Splits bytes into lines as they come and keeps the URLs and their options: only the unfinished last
/// line is held, never more than `maxLineBytes` of it.
struct LineSplitter {
    let maxLineBytes: Int
    private(set) var entries: [InputEntry] = []
    var urls: [String] { entries.map(\.url) }
    private var pending: [UInt8] = []
    private var lineNumber = 1

    init(maxLineBytes: Int) {
        self.maxLineBytes = maxLineBytes
    }

    /// Takes the next bytes; returns the problem of a line (too long, a bad option), if one has one.
    mutating func add(_ bytes: ArraySlice<UInt8>) -> HaulError? {
        var start = bytes.startIndex
        while let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) {
            if pending.count + (newline - start) > maxLineBytes + 1 { return tooLong() }
            pending += bytes[start..<newline]
            if let problem = endLine() { return problem }
            start = newline + 1
        }
        pending += bytes[start...]
        // One byte of slack: the `\r` of a CRLF line may arrive before its `\n`.
        return pending.count > maxLineBytes + 1 ? tooLong() : nil
    }

    /// The input has ended: the last line may lack its newline.
    mutating func finish() -> HaulError? {
        pending.isEmpty ? nil : endLine()
    }

    private func tooLong() -> HaulError {
        HaulError(.usage, "line \(lineNumber) is longer than \(maxLineBytes) bytes")
    }

    private mutating func endLine() -> HaulError? {
        if pending.last == UInt8(ascii: "\r") { pending.removeLast() }
        if pending.count > maxLineBytes { return tooLong() }
        if let url = Self.plainURL(pending) {
            entries.append(InputEntry(url: url))
            pending.removeAll(keepingCapacity: true)
            lineNumber += 1
            return nil
        }
        defer {
            pending.removeAll(keepingCapacity: true)
            lineNumber += 1
        }
        let raw = Substring(String(decoding: pending, as: UTF8.self))
        let indented = raw.first == " " || raw.first == "\t"
        var line = raw
        while line.first?.isWhitespace == true { line.removeFirst() }
        while line.last?.isWhitespace == true { line.removeLast() }
        guard !line.isEmpty, !line.hasPrefix("#") else { return nil }
        // An indented URL (`://` before any `=`) is still a URL, as it was before options existed. (Looked
        // for in the UTF-8 bytes, not by Character: a list of 1000 URLs took 10 ms to read that way.)
        let bytes = line.utf8
        let scheme = bytes.indices.first { bytes[$0...].starts(with: "://".utf8) }
        let equals = bytes.firstIndex(of: UInt8(ascii: "="))
        let looksLikeURL = scheme != nil && (equals == nil || scheme! < equals!)
        if indented && !looksLikeURL {
            guard !entries.isEmpty else {
                return HaulError(.usage, "line \(lineNumber): an option (an indented line) before any URL")
            }
            do {
                try entries[entries.count - 1].options.set(line: String(line))
            } catch {
                return HaulError(.usage, "line \(lineNumber): \(error.message)")
            }
            return nil
        }
        // aria2 puts a download's mirrors on its line after tabs: the first is the URL.
        let urls = JobOptions.urls(ofLine: line)
        // Blanks that `trimmingWhitespace` takes and `isWhitespace` does not (U+200B): a blank line.
        guard let url = urls.first else { return nil }
        do {
            _ = try JobOptions.sources(urls)
        } catch {
            return HaulError(.usage, "line \(lineNumber): \(error.message)")
        }
        entries.append(InputEntry(url: url, mirrors: Array(urls.dropFirst())))
        return nil
    }
}

extension LineSplitter {
    /// The URL of the common line, read on its bytes: one that starts with neither blank nor `#` (so it is
    /// neither indented nor a comment, and nothing is trimmed at its start), and holds printable ASCII to its
    /// end. nil for any other line, which `endLine` reads by Character as before: one with a tab (mirrors
    /// follow it) too. (Trimming and searching by Character cost 10,000 instructions a line: 10 ms before the
    /// first of a thousand downloads could start.)
    static func plainURL(_ line: [UInt8]) -> String? {
        guard let first = line.first, first > 0x20, first < 0x7F, first != UInt8(ascii: "#") else { return nil }
        for byte in line {
            guard byte > 0x20, byte < 0x7F else { return nil }
        }
        return String(decoding: line, as: UTF8.self)
    }
}

/// One URL of an input file (or of the command line), with its mirrors and the options of the indented
/// lines under it.
struct InputEntry: Equatable {
    var url: String
    /// The other addresses of the same file: the URLs after the first on its line, or `--mirror`'s.
    var mirrors: [String] = []
    var options = JobOptions()
}

extension JobOptions {
    /// The names an input file takes, as its unknown-option error lists them (`split`,
    /// `max-connection-per-server` and `max-download-limit`, aria2's other spellings, are taken too).
    static let inputFileNames = "out, dir, segments, sequential, header, checksum, limit-rate, user-agent, referer"

    /// Takes an input file's `key=value` line (the key in any case), checked now by `JobOptions`: a bad one
    /// stops the run before anything starts. A name it does not take is an error, not skipped.
    mutating func set(line: String) throws(HaulError) {
        guard let equals = line.firstIndex(of: "=") else {
            throw HaulError(.usage, "'\(line)' is not key=value")
        }
        let key = line[..<equals].trimmingWhitespace().lowercased()
        let value = line[line.index(after: equals)...].trimmingWhitespace()
        guard let name = Name(rawValue: key), name.isTaken(by: .inputFile) else {
            throw HaulError(.usage, "unknown option '\(key)' (\(Self.inputFileNames))")
        }
        do {
            try set(name, value)
        } catch {
            throw HaulError(.usage, error.message)
        }
    }

    /// This download's job: the command line's, with these options over it. A relative `dir` is made
    /// absolute against this directory with `absolute` (for the service, whose current directory is another).
    func apply(to job: inout DownloadJob, absolute: Bool) {
        guard let directory, absolute, !FilePath.hasPrefix(directory, "/") else { return apply(to: &job) }
        var options = self
        options.directory = FilePath.join(FileManager.default.currentDirectoryPath, directory)
        options.apply(to: &job)
    }
}
