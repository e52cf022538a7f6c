import Glibc

/// Deletes what haul itself wrote for one download (`haul rm --files`, the TUI's `D`): the finished file or its
/// `.part`, the part's state file and its temporaries, the write journal, and the partial preview.
///
/// Only what haul can show it made goes. The finished file and the `.part` must be the very file haul created
/// (its `DEVICE:INODE` and birth time, recorded at the claim and kept by the rename): a file that was at the
/// name before haul claimed it, or that replaced it since, has another inode or was born later, and stays. The state, temporaries and journal go
/// only beside a part or file proven so (haul's claim of the part makes them its own). The preview goes when its
/// bytes are the prefix of that file (haul writes it from the part's first bytes, adding at most an EOI marker).
///
/// Every name is looked at and unlinked relative to the download's directory, held open, without following a
/// link (`fstatat(AT_SYMLINK_NOFOLLOW)`, `unlinkat`): a symbolic link planted at a name is left (said so), never
/// followed, and nothing outside that directory is touched. A file with other hard links loses only haul's
/// name; the others keep the bytes.
package enum OwnFiles {
    /// What is known of the download: where its file is (or goes), and the identity of the part haul made.
    package struct Known: Sendable, Equatable {
        /// The finished file's path (its `.part` is beside it, `path + ".part"`).
        package var path: String
        /// `DEVICE:INODE` of the `.part` haul created (`DownloadRecord.part`); nil when it never had one.
        package var part: String?
        /// The finished file's size, when the download is done: a file deleted and written again at the name
        /// may get the same inode number back (file systems reuse a freed one at once), so a finished file
        /// of another size is not haul's either.
        package var size: Int64?

        package init(path: String, part: String?, size: Int64? = nil) {
            self.path = path
            self.part = part
            self.size = size
        }
    }

    /// What one removal did: what went, what was left as not haul's, and what could not be deleted.
    package struct Outcome: Sendable, Equatable {
        package var removed: [(path: String, bytes: Int64)] = []
        /// A name that is not haul's (a link, another file), with the reason; nothing was done to it.
        package var left: [(path: String, reason: String)] = []
        /// A name that is haul's but could not be deleted (permission), with the system's reason.
        package var failed: [(path: String, reason: String)] = []

        package init() {}

        package var bytes: Int64 { removed.reduce(0) { $0 + $1.bytes } }

        package static func == (a: Outcome, b: Outcome) -> Bool {
            a.removed.elementsEqual(b.removed) { $0 == $1 } && a.left.elementsEqual(b.left) { $0 == $1 }
                && a.failed.elementsEqual(b.failed) { $0 == $1 }
        }
    }

    /// Deletes what `known` shows haul wrote. Blocking (run it off the cooperative pool).
    package static func remove(_ known: Known) -> Outcome {
        var outcome = Outcome()
        let directoryPath = FilePath.parent(of: known.path)
        let name = FilePath.baseName(of: known.path)
        let directory = directoryPath.withCString { open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard directory >= 0 else {
            // No directory, no files: nothing of this download is left to delete.
            if errno != ENOENT { outcome.failed.append((directoryPath, String(cString: strerror(errno)))) }
            return outcome
        }
        defer { close(directory) }
        let remover = Remover(directory: directory, directoryPath: directoryPath)
        let part = name + ".part"
        // The preview is judged against the file's bytes, so before the file goes.
        let previewName = FilePath.baseName(of: PartialPreview.previewPath(for: known.path))
        var previewIsOurs = false
        var proven = false
        for candidate in [name, part] {
            guard let info = remover.look(candidate), remover.isRegular(info, candidate, &outcome) else { continue }
            guard let identity = known.part else {
                outcome.left.append((remover.path(candidate), "is not known to be a file haul wrote (haul kept no record of making it)"))
                continue
            }
            let resized = candidate == name && known.size.map { $0 != Int64(info.st_size) } == true
            let current = FileIdentity.text(device: info.st_dev, inode: info.st_ino,
                                            birth: FileIdentity.birth(in: directory, candidate))
            guard FileIdentity.same(current, as: identity), !resized else {
                outcome.left.append((remover.path(candidate), "is not the file haul wrote (it was there before, or was replaced since)"))
                continue
            }
            if !previewIsOurs { previewIsOurs = remover.isPreview(previewName, of: candidate) }
            proven = true
            remover.unlink(candidate, info, &outcome)
        }
        guard proven else { return outcome }
        let state = part + ".json"
        for helper in [state, Claim.journalName(forPart: part)] + remover.temporaries(of: state) {
            guard let info = remover.look(helper), remover.isRegular(info, helper, &outcome) else { continue }
            remover.unlink(helper, info, &outcome)
        }
        if previewIsOurs, let info = remover.look(previewName) {
            remover.unlink(previewName, info, &outcome)
        }
        return outcome
    }

    /// The system calls of one removal, relative to the directory's descriptor.
    private struct Remover {
        let directory: Int32
        let directoryPath: String

        func path(_ name: String) -> String { FilePath.join(directoryPath, name) }

        /// `fstatat` of `name` without following a link; nil when nothing is there.
        func look(_ name: String) -> stat? {
            var info = stat()
            guard name.withCString({ fstatat(directory, $0, &info, AT_SYMLINK_NOFOLLOW) }) == 0 else { return nil }
            return info
        }

        /// Whether `info` is a regular file of this user; a link or anything else is left, and said so.
        func isRegular(_ info: stat, _ name: String, _ outcome: inout Outcome) -> Bool {
            switch info.st_mode & S_IFMT {
            case S_IFREG:
                guard info.st_uid == geteuid() else {
                    outcome.left.append((path(name), "belongs to another user"))
                    return false
                }
                return true
            case S_IFLNK:
                outcome.left.append((path(name), "is a symbolic link, not haul's file"))
            default:
                outcome.left.append((path(name), "is not a regular file"))
            }
            return false
        }

        func unlink(_ name: String, _ info: stat, _ outcome: inout Outcome) {
            if name.withCString({ unlinkat(directory, $0, 0) }) == 0 {
                outcome.removed.append((path(name), Int64(info.st_size)))
            } else if errno != ENOENT {
                outcome.failed.append((path(name), String(cString: strerror(errno))))
            }
        }

        /// The temporary files a crash in the middle of a state file's replacement left (`name.HEX.tmp`).
        func temporaries(of name: String) -> [String] {
            let copy = dup(directory)
            guard copy >= 0, let listing = fdopendir(copy) else {
                if copy >= 0 { close(copy) }
                return []
            }
            defer { closedir(listing) }
            var found: [String] = []
            while let entry = readdir(listing) {
                let candidate = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if OutputDirectory.isTemporary(candidate, of: name) { found.append(candidate) }
            }
            return found
        }

        /// Whether the file `preview` is the partial preview haul wrote of `file`: a regular file of this user,
        /// with one link, whose bytes are `file`'s first bytes, an EOI marker (FF D9) at most added. A file that
        /// was at the preview's name before is not a prefix of this download's file.
        func isPreview(_ preview: String, of file: String) -> Bool {
            guard let info = look(preview), info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(),
                  info.st_nlink == 1, info.st_size > 0 else { return false }
            let previewFD = preview.withCString { openat(directory, $0, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
            guard previewFD >= 0 else { return false }
            defer { close(previewFD) }
            let fileFD = file.withCString { openat(directory, $0, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
            guard fileFD >= 0 else { return false }
            defer { close(fileFD) }
            let size = Int64(info.st_size)
            let same = Self.samePrefix(previewFD, fileFD, length: size)
            if same == size { return true }
            // Haul's preview of a JPEG that lacked its End Of Image ends with one the file does not have there.
            guard same == size - 2, size >= 2 else { return false }
            var tail = [UInt8](repeating: 0, count: 2)
            let read = tail.withUnsafeMutableBytes { pread(previewFD, $0.baseAddress, 2, off_t(size - 2)) }
            return read == 2 && tail == [0xFF, 0xD9]
        }

        /// How many of the first `length` bytes of `a` and `b` agree.
        private static func samePrefix(_ a: Int32, _ b: Int32, length: Int64) -> Int64 {
            let chunk = 1 << 16
            var left = [UInt8](repeating: 0, count: chunk)
            var right = [UInt8](repeating: 0, count: chunk)
            var offset: Int64 = 0
            while offset < length {
                let want = Int(Swift.min(Int64(chunk), length - offset))
                let got = left.withUnsafeMutableBytes { pread(a, $0.baseAddress, want, off_t(offset)) }
                let other = right.withUnsafeMutableBytes { pread(b, $0.baseAddress, want, off_t(offset)) }
                guard got > 0, other > 0 else { return offset }
                let count = Swift.min(got, other)
                for index in 0..<count where left[index] != right[index] { return offset + Int64(index) }
                offset += Int64(count)
                if count < want { return offset }
            }
            return offset
        }
    }
}
