import CLinux
import FoundationEssentials
import Glibc
import NIOConcurrencyHelpers

/// The output directory of a download, held open: every name haul creates, opens, renames or removes in it
/// goes through this descriptor (`openat`, `renameat2`, `unlinkat`), never follows a symbolic link at the
/// last step, and never creates over something that is there.
///
/// So a name planted in the directory (a symlink at `NAME.part` pointing elsewhere, a hard link to another
/// file, a dangling link) can make haul pick another name, but never write outside the directory or into a
/// file it did not create. The directory itself is the one the user named (a link there is followed once,
/// at open); a later swap of that path does not move where the download goes.
///
/// Names reach the system calls through `withCString`: a String passed where C takes a pointer is first
/// copied into a new array (nine allocations a small download made that way).
final class OutputDirectory: Sendable {
    /// As the user gave it, for messages and results.
    let path: String
    /// Internal for the questions asked of the directory itself (`Room`'s free space), never for a path.
    let descriptor: Int32
    /// The directory's device and inode: the same directory, whatever path led to it (group commits are
    /// per directory, `DirectorySync`).
    let identity: DirectorySync.Identity

    /// Creates `path` (and its parents) if missing, then holds it open. (Opened first: one download of many
    /// small files costs two system calls here, not four.)
    ///
    /// With `root`, `path` must lie in it, and every directory below `root` is opened (or created) one by one
    /// without following a link: a link there, planted or swapped in after `path` was checked, is an error.
    init(_ path: String, below root: String? = nil) throws(HaulError) {
        var fd: Int32
        if let root {
            fd = try Self.openConfined(path, below: root)
        } else {
            fd = path.withCString { open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
            if fd < 0, errno == ENOENT || errno == ENOTDIR {
                try FileSystem.makeDirectory(path)
                fd = path.withCString { open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
            }
        }
        guard fd >= 0 else { throw PartFile.error("cannot open directory", path) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let error = PartFile.error("cannot open directory", path)
            _ = Glibc.close(fd)
            throw error
        }
        self.path = path
        descriptor = fd
        identity = DirectorySync.Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// `path`'s descriptor, reached from `root` (opened as it is) through each directory below it with
    /// `O_NOFOLLOW`, creating those that are missing.
    private static func openConfined(_ path: String, below root: String) throws(HaulError) -> Int32 {
        // On bytes (`FilePath`): a `/` or `..` that a combining mark joins into one Character is still one.
        let base = FilePath.hasSuffix(root, "/") ? root : root + "/"
        guard FilePath.same(path, root) || FilePath.hasPrefix(path, base) else {
            throw HaulError(.fileIO, "output directory \(path) is outside \(root)")
        }
        var fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw PartFile.error("cannot open directory", root) }
        var reached = root
        let below = path[path.utf8.index(path.startIndex, offsetBy: root.utf8.count)...]
        for component in FilePath.components(of: below) where !FilePath.same(component, ".") {
            reached = FilePath.join(reached, String(component))
            guard !FilePath.same(component, "..") else {
                _ = Glibc.close(fd)
                throw HaulError(.fileIO, "output directory \(path) goes up out of \(root)")
            }
            var next = openAt(String(component), in: fd, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if next < 0, errno == ENOENT {
                _ = mkdirat(fd, String(component), 0o755)
                next = openAt(String(component), in: fd, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            let failure = errno
            _ = Glibc.close(fd)
            guard next >= 0 else {
                if failure == ELOOP || failure == ENOTDIR {
                    throw HaulError(.fileIO, "output directory \(path): \(reached) is not a directory below \(root) "
                                    + "(a link is never followed there)")
                }
                errno = failure
                throw PartFile.error("cannot open directory", reached)
            }
            fd = next
        }
        return fd
    }

    /// Makes the names created, renamed and removed in it so far durable (fsync of the held descriptor: the
    /// directory the download went to, even if its path now leads elsewhere). Group-committed across
    /// downloads by `DirectorySync`.
    func syncNames() {
        DirectorySync.shared.sync(identity) { _ = fsync(descriptor) }
    }

    deinit { _ = Glibc.close(descriptor) }

    /// `openat` of `name` in the directory `directory` (passed in place: see the type's comment).
    private static func openAt(_ name: String, in directory: Int32, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
        name.withCString { openat(directory, $0, flags, mode) }
    }

    /// `fstatat` of `name`, not through a link: false (and `errno`) when it fails.
    private func status(of name: String, _ info: inout stat) -> Bool {
        name.withCString { fstatat(descriptor, $0, &info, AT_SYMLINK_NOFOLLOW) } == 0
    }

    /// The path of `name` in this directory, for people.
    func file(_ name: String) -> String { FilePath.join(path, name) }

    /// Whether anything (a file, a directory, a link, even a dangling one) has this name.
    func exists(_ name: String) -> Bool {
        var info = stat()
        return status(of: name, &info)
    }

    /// Whether `name` is a directory (not through a link).
    func isDirectory(_ name: String) -> Bool {
        var info = stat()
        return status(of: name, &info) && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// The modification time of the regular file `name` (not through a link); nil when there is none.
    func modificationTime(_ name: String) -> Date? {
        var info = stat()
        guard status(of: name, &info), info.st_mode & S_IFMT == S_IFREG else { return nil }
        return Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
    }

    /// Whether a download (in this process or another) holds `name` locked: one that has given its part this
    /// name and not yet let go of it (it removes its state file first). False when nothing is there.
    func isHeld(_ name: String) -> Bool {
        let fd = Self.openAt(name, in: descriptor, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        return flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK
    }

    /// The size and modification time (whole seconds) of `name` when it is a file haul may write into (a
    /// regular file of this user with one link, not through a link); nil otherwise.
    func trustedFile(_ name: String) -> (size: Int64, modified: Int)? {
        var info = stat()
        guard status(of: name, &info), Self.untrustworthy(info) == nil else { return nil }
        return (Int64(info.st_size), Int(info.st_mtim.tv_sec))
    }

    /// What `claimPart` found at a part file's name.
    enum PartClaim {
        /// Nothing was there: a new, empty file, created by this call and locked.
        case created(PartFile)
        /// A file of this user with no other name, from an earlier run: opened and locked.
        case existing(PartFile)
        /// Another download (in this process or another) holds it.
        case busy
        /// Something haul must not write through, and why.
        case untrusted(PartDistrust)
    }

    /// Claims the part file `name`: creates it exclusively, or opens the one left by an earlier run if it
    /// can be trusted (a regular file of this user with a single link), and takes an exclusive `flock`.
    /// `afterOpen`: called between the open of an existing part and its lock (tests: its owner renames it then).
    func claimPart(_ name: String, afterOpen: () -> Void = {}) throws(HaulError) -> PartClaim {
        while true {
            let fd = Self.openAt(name, in: descriptor, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
            if fd >= 0 {
                guard let part = try lock(fd, name) else { return .busy }
                return .created(part)
            }
            guard errno == EEXIST else { throw PartFile.error("cannot create", file(name)) }
            // Look before opening: opening a FIFO or a device can have effects of its own.
            var seen = stat()
            guard status(of: name, &seen) else {
                if errno == ENOENT { continue }  // gone meanwhile (renamed into place by its owner): try again
                throw PartFile.error("cannot inspect", file(name))
            }
            if let problem = Self.untrustworthy(seen) { return .untrusted(problem) }
            let existing = Self.openAt(name, in: descriptor, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard existing >= 0 else {
                if errno == ENOENT { continue }
                if errno == ELOOP { return .untrusted(.symbolicLink) }
                throw PartFile.error("cannot open", file(name))
            }
            // The name may have been swapped between the look and the open: judge what was opened.
            var opened = stat()
            guard fstat(existing, &opened) == 0 else {
                let code = errno
                Glibc.close(existing)
                throw PartFile.error("cannot inspect", file(name), code)
            }
            if let problem = Self.untrustworthy(opened) {
                Glibc.close(existing)
                return .untrusted(problem)
            }
            afterOpen()
            guard let part = try lock(existing, name) else { return .busy }
            // Locked now, but the name may have moved on while it was not: its owner may have renamed the
            // finished part into place (and let go of the lock) between the open and the lock. That inode is
            // someone's finished file now, never a part to write into: look at the name again.
            guard holds(name, part) else {
                try? part.close()
                continue
            }
            return .existing(part)
        }
    }

    /// Why a part file found on disk is not one haul may write into, or nil when it may.
    static func untrustworthy(_ info: stat) -> PartDistrust? {
        switch info.st_mode & S_IFMT {
        case S_IFLNK: return .symbolicLink
        case S_IFREG: break
        default: return .notRegularFile
        }
        if info.st_uid != geteuid() { return .otherOwner }
        if info.st_nlink != 1 { return .otherHardLinks }
        return nil
    }

    /// Locks the claimed part and takes its `fstat` once, locked: its identity and size as claimed.
    private func lock(_ fd: Int32, _ name: String) throws(HaulError) -> PartFile? {
        var info = stat()
        guard flock(fd, LOCK_EX | LOCK_NB) == 0, fstat(fd, &info) == 0 else {
            let code = errno
            Glibc.close(fd)
            if code == EWOULDBLOCK { return nil }
            throw PartFile.error("cannot lock", file(name), code)
        }
        return PartFile(descriptor: fd, path: file(name), claimed: info, journal: WriteJournal())
    }

    /// Opens the journal `name` for appending, emptied: created if missing (mode 0600), else only when it is
    /// a file haul may write into (as a part: regular, this user's, one link). nil when it cannot be.
    func openJournal(_ name: String) -> Int32? {
        let fd = Self.openAt(name, in: descriptor, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, Self.untrustworthy(info) == nil, ftruncate(fd, 0) == 0 else {
            Glibc.close(fd)
            return nil
        }
        return fd
    }

    /// Whether `name` is still the file open as `part` (nobody swapped the name since it was claimed).
    func holds(_ name: String, _ part: PartFile) -> Bool {
        var atName = stat()
        guard status(of: name, &atName) else { return false }
        return part.isFile(atName)
    }

    /// Renames `from` to `to` unless something is at `to`: false when it is (nothing changed then).
    func renameNoReplace(_ from: String, _ to: String) throws(HaulError) -> Bool {
        let result = FileSystem.namespaceLock.withLock { () -> Int32 in
            from.withCString { from in
                to.withCString { to in
                    if haul_rename_noreplace(descriptor, from, descriptor, to) == 0 { return 0 }
                    guard errno == EINVAL || errno == ENOSYS else { return errno }
                    // A file system without RENAME_NOREPLACE: a hard link is also refused when the name is taken.
                    guard linkat(descriptor, from, descriptor, to, 0) == 0 else { return errno }
                    unlinkat(descriptor, from, 0)
                    return 0
                }
            }
        }
        if result == EEXIST { return false }
        guard result == 0 else { throw PartFile.error("cannot rename \(file(from)) to", file(to), result) }
        return true
    }

    /// Renames `from` to `to`, replacing what is there (a link at `to` is replaced, never followed).
    func rename(_ from: String, _ to: String) throws(HaulError) {
        let result = FileSystem.namespaceLock.withLock {
            from.withCString { from in to.withCString { to in renameat(descriptor, from, descriptor, to) == 0 ? 0 : errno } }
        }
        guard result == 0 else { throw PartFile.error("cannot rename \(file(from)) to", file(to), result) }
    }

    func remove(_ name: String) {
        _ = name.withCString { unlinkat(descriptor, $0, 0) }
    }

    /// Makes the renames and creates done so far in this directory durable.
    func sync() {
        _ = FileIO.sync(descriptor)
    }

    /// The temporary names `replace` uses for `name`: `name.HEX.tmp`, HEX being 1 to 8 hex digits.
    static func isTemporary(_ candidate: String, of name: String) -> Bool {
        // By bytes: `hasPrefix` would also take a canonically equivalent name, another file.
        guard FilePath.hasPrefix(candidate, name + "."), FilePath.hasSuffix(candidate, ".tmp") else { return false }
        let middle = candidate.utf8.dropFirst(name.utf8.count + 1).dropLast(4)
        return (1...8).contains(middle.count) && middle.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// Removes what a crash in the middle of `replace(name, ...)` left: its temporary files. Only for a
    /// caller that holds the lock that makes it the only writer of `name` (a claimed part's state file).
    func removeTemporaries(of name: String) {
        let fd = dup(descriptor)
        guard fd >= 0, let stream = fdopendir(fd) else {
            if fd >= 0 { _ = Glibc.close(fd) }
            return
        }
        defer { closedir(stream) }
        var leftovers: [String] = []
        while let entry = readdir(stream) {
            let entryName = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if Self.isTemporary(entryName, of: name) { leftovers.append(entryName) }
        }
        for leftover in leftovers { remove(leftover) }
    }

    /// Writes `bytes` to `name` atomically and durably (see the other `replace`), mode 0600.
    func replace(_ name: String, with bytes: [UInt8], durable: Bool = true) throws(HaulError) {
        try replace(name, mode: 0o600, durable: durable) { (file) throws(HaulError) in try file.write(bytes, at: 0) }
    }

    /// The one atomic write: `write` fills a new file of a unique name beside `name` (created exclusively,
    /// no link followed, `mode`), which is then synced and renamed over `name`. When a step fails nothing is
    /// left behind and an earlier `name` stays as it was. The rename is durable once the directory is synced
    /// (`sync()`), which a caller does when the name must survive a power loss, not only a crash. Without
    /// `durable` the new file is not synced: a crash keeps it, a power loss may leave it empty or torn (for
    /// contents that a reader checks, such as a resume state with nothing durable in it yet).
    func replace(_ name: String, mode: mode_t, durable: Bool = true,
                 writing write: (PartFile) throws(HaulError) -> Void) throws(HaulError) {
        // Short enough to fit beside any name haul makes (FileNaming.maxBytes leaves the room).
        let temporary = name + "." + String(UInt32.random(in: 0...UInt32.max), radix: 16) + ".tmp"
        let fd = Self.openAt(temporary, in: descriptor, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw PartFile.error("cannot create", file(temporary)) }
        let written = PartFile(descriptor: fd, path: file(temporary))
        do {
            try write(written)
            if durable { try written.sync() }
            try written.close()
            try rename(temporary, name)
        } catch {
            try? written.close()
            remove(temporary)
            throw error
        }
    }

    /// What `readSmallFile` found.
    enum Contents: Equatable {
        case missing
        /// There, but not a regular file of at most the size asked for (a link, a FIFO, too large), or
        /// unreadable.
        case unusable
        case bytes([UInt8])
    }

    /// Reads `name` whole when it is a regular file (a link is not followed) of at most `limit` bytes.
    func readSmallFile(_ name: String, limit: Int) -> Contents {
        let fd = Self.openAt(name, in: descriptor, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return errno == ENOENT ? .missing : .unusable }
        defer { Glibc.close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= limit else { return .unusable }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        let count = try? FileIO.readFully(fd, into: &bytes, at: 0)
        // Shorter than it said: changed under us.
        return count == bytes.count ? .bytes(bytes) : .unusable
    }
}
