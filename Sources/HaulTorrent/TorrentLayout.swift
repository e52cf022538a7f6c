import HaulCore

/// Where each file of a torrent goes, decided before libtorrent writes a byte: a torrent's names are hostile
/// input. Every part of every path goes through haul's own name sanitiser (`FileNaming.sanitize`: no `/`,
/// `..`, hidden or control characters, haul's own suffixes, at most 224 bytes), so each file lands under
/// the output directory: a single-file torrent as NAME, a multi-file one under the folder of its (sanitised)
/// name. Two files that would share a path, a file where another's folder is, or a name already on disk
/// get a number (`a.1.bin`), as HTTP downloads do. Pure: the disk is asked through `taken`.
package struct TorrentLayout: Sendable, Equatable {
    package struct Entry: Sendable, Equatable {
        package var index: Int
        /// Relative to the output directory: the file while its pieces are not all verified, and after.
        package var partPath: String
        package var finalPath: String
        package var size: Int64
        /// Chosen with `--select-file` (all when none is given); pad files never are.
        package var selected: Bool
        /// Renamed already, in a run that stopped (resume data says so).
        package var alreadyFinal = false
    }

    /// The regular files' entries, in the torrent's order (pad files have none: libtorrent never writes them).
    package var entries: [Entry]
    /// The single file's name, or the folder's of a multi-file torrent: what the lines call the download.
    package var name: String

    package static let partSuffix = ".part"

    /// `taken(path)`: whether a path (relative to the output directory) is on disk already and is not this
    /// torrent's, so the file must take another name.
    package init(files: [TorrentFile], name torrentName: String, selection: FileSelection?,
                 taken: (String) -> Bool = { _ in false }) {
        let regular = files.filter { $0.kind != .pad }
        let multi = regular.count != 1 || regular.first.map { Self.components($0.path).count > 1 } == true
        var used = Set<String>()
        var folders = Set<String>()
        // The mapped path of each folder of the torrent, so that all its files land in the same one.
        var mappedFolders: [String: String] = [:]
        var root = ""
        if multi {
            root = Self.free(FileNaming.sanitize(torrentName.isEmpty ? "download" : torrentName), in: "") {
                taken($0) && !Self.isFolder($0, taken: taken)
            }
            folders.insert(root)
        }
        name = multi ? root : ""
        entries = []
        for file in regular {
            var parts = Self.components(file.path)
            // A multi-file torrent's paths start with its own name, which `root` stands for.
            if multi && parts.count > 1 { parts.removeFirst() }
            var folder = root
            var original = ""
            for part in parts.dropLast() {
                original += "/" + part
                if let mapped = mappedFolders[original] {
                    folder = mapped
                    continue
                }
                let mapped = Self.free(FileNaming.sanitize(part), in: folder) { used.contains($0) }
                mappedFolders[original] = mapped
                folders.insert(mapped)
                folder = mapped
            }
            let leaf = FileNaming.sanitize(parts.last ?? "download")
            let path = Self.free(leaf, in: folder) { candidate in
                used.contains(candidate) || folders.contains(candidate) || taken(candidate)
                    || taken(candidate + Self.partSuffix)
            }
            used.insert(path)
            let selected = selection?.contains(file.index + 1) ?? true
            entries.append(Entry(index: file.index, partPath: path + Self.partSuffix, finalPath: path,
                                 size: file.size, selected: selected))
        }
        if !multi { name = entries.first?.finalPath ?? FileNaming.sanitize(torrentName) }
    }

    init(entries: [Entry], name: String) {
        self.entries = entries
        self.name = name
    }

    /// The layout resume data of this torrent records, when every file has a name there that haul gives
    /// (`isHaulName`: relative, each part as `FileNaming.sanitize` leaves it, all different); nil otherwise,
    /// and the layout is made anew.
    init?(resumed: TorrentMetadata, files: [TorrentFile], name torrentName: String, selection: FileSelection?) {
        var entries: [Entry] = []
        var seen = Set<String>()
        for file in files where file.kind != .pad {
            guard let path = resumed.renamedPath(file: file.index), Self.isHaulName(path) else { return nil }
            let part = FilePath.hasSuffix(path, Self.partSuffix)
            let final = part ? String(path.utf8.dropLast(Self.partSuffix.utf8.count))! : path
            guard seen.insert(final).inserted else { return nil }
            entries.append(Entry(index: file.index, partPath: final + Self.partSuffix, finalPath: final, size: file.size,
                                 selected: selection?.contains(file.index + 1) ?? true, alreadyFinal: !part))
        }
        guard let first = entries.first else { return nil }
        let top = Self.components(first.finalPath).first ?? first.finalPath
        self.init(entries: entries, name: entries.count == 1 && !first.finalPath.contains("/") ? first.finalPath : top)
    }

    /// A relative path each of whose parts `FileNaming.sanitize` leaves as it is (the last without `.part`).
    static func isHaulName(_ path: String) -> Bool {
        guard !path.hasPrefix("/"), !path.hasSuffix("/"), !path.contains("//"), !path.contains("\\") else { return false }
        var parts = components(path)
        guard let last = parts.popLast() else { return false }
        let leaf = FilePath.hasSuffix(last, partSuffix) ? String(last.utf8.dropLast(partSuffix.utf8.count))! : last
        return (parts + [leaf]).allSatisfy { !$0.isEmpty && FileNaming.sanitize($0) == $0 }
    }

    /// `path`'s parts, without empty ones (a leading `/`, `a//b`) and without `.` and `..` (which name no file).
    static func components(_ path: String) -> [String] {
        path.split(whereSeparator: { $0 == "/" || $0 == "\\" }).map(String.init).filter { $0 != "." && $0 != ".." }
    }

    /// `name` in `folder`, numbered until `isTaken` says no.
    static func free(_ name: String, in folder: String, isTaken: (String) -> Bool) -> String {
        let join = { (leaf: String) in folder.isEmpty ? leaf : folder + "/" + leaf }
        var candidate = join(name)
        var n = 1
        while isTaken(candidate) {
            candidate = join(FileNaming.numbered(name, n))
            n += 1
        }
        return candidate
    }

    /// A folder on disk is one a multi-file torrent may share (its files are checked one by one).
    static func isFolder(_ path: String, taken: (String) -> Bool) -> Bool { taken(path + "/") }

    /// Bytes of the selected files.
    package var selectedBytes: Int64 { entries.filter(\.selected).reduce(0) { $0 + $1.size } }
}

/// `--select-file 1,3-5`: aria2's syntax, 1-based file numbers in the torrent's order (pad files count, as
/// they do in aria2's and libtorrent's lists).
package struct FileSelection: Sendable, Equatable {
    package var ranges: [ClosedRange<Int>]

    package func contains(_ number: Int) -> Bool { ranges.contains { $0.contains(number) } }

    /// nil, and the reason, for what is not a list of numbers and ranges from 1.
    package static func parse(_ text: String) -> Result<FileSelection, HaulError> {
        var ranges: [ClosedRange<Int>] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let bounds = item.split(separator: "-", omittingEmptySubsequences: false)
            let numbers = bounds.map { Int($0.trimmingWhitespace()) }
            guard (1...2).contains(numbers.count), let low = numbers.first ?? nil, let high = numbers.last ?? nil,
                  low >= 1, low <= high
            else {
                return .failure(HaulError(.usage, "--select-file '\(text)': not a list of file numbers from 1 such as 1,3-5"))
            }
            ranges.append(low...high)
        }
        return .success(FileSelection(ranges: ranges))
    }
}
