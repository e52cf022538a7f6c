import Glibc
import NIOConcurrencyHelpers

/// The free space of the output file systems, and what the running downloads on each still need: a download
/// whose size is known is checked against both before its first byte (`Downloader.prepare`), so that one that
/// cannot fit waits (or, in a plain run, fails with exit 3) before writing anything, instead of failing after
/// writing gigabytes. The queue asks the same of a download waiting for room before it starts it again.
///
/// One is shared by every download of a `Downloader` (it is a reference): a download holds what it still
/// needs (`Ticket`) from its check to its end, updated from its progress, so that two downloads that each fit
/// alone do not both start on room for one.
package final class Room: Sendable {
    /// A file system's free space, as an unprivileged writer sees it (`statvfs`'s `f_bavail`), and which file
    /// system it is (the directory's device).
    package struct Space: Sendable, Equatable {
        package var device: UInt64
        package var available: Int64

        package init(device: UInt64, available: Int64) {
            self.device = device
            self.available = available
        }
    }

    /// Reads the bytes free on the file system `directory` is on (through `descriptor`, the directory held
    /// open, when there is one); nil when it cannot be read (then nothing is checked: a download is never held
    /// back for a question the system does not answer).
    package typealias Probe = @Sendable (_ directory: String, _ descriptor: Int32?) -> Int64?

    /// What a download whose size is unknown (and that filled the disk) waits for before it is tried again:
    /// room for this much more, beyond what the running downloads still need.
    package static let unknownNeed: Int64 = 16 << 20

    private let probe: Probe
    private let holds = NIOLockedValueBox(Holds())

    private struct Holds {
        var next = 0
        var byID: [Int: Hold] = [:]
    }

    private struct Hold {
        var device: UInt64
        var total: Int64
        var completed: Int64
        var still: Int64 { Swift.max(0, total - completed) }
    }

    package init(probe: @escaping Probe = Room.statfs) {
        self.probe = probe
    }

    /// `fstatvfs` of the directory's descriptor, or `statvfs` of its path.
    package static let statfs: Probe = { directory, descriptor in
        var info = statvfs()
        let read = if let descriptor { fstatvfs(descriptor, &info) } else { statvfs(directory, &info) }
        guard read == 0 else { return nil }
        let bytes = UInt64(info.f_bavail).multipliedReportingOverflow(by: UInt64(info.f_frsize))
        return bytes.overflow ? Int64.max : Int64(clamping: bytes.partialValue)
    }

    /// The space of `directory`'s file system, less what running downloads there still need (nil when it
    /// cannot be read); `except` leaves out one download's own hold. A download's check gives the directory
    /// it holds open (`descriptor`, and its `device`, known from its `fstat`): nothing is looked up by path.
    package func free(in directory: String, descriptor: Int32? = nil, device known: UInt64? = nil,
                      except ticket: Ticket? = nil) -> (space: Space, held: Int64)? {
        guard let available = probe(directory, descriptor) else { return nil }
        var device = known ?? 0
        var status = stat()
        if known == nil, stat(directory, &status) == 0 { device = UInt64(status.st_dev) }
        let space = Space(device: device, available: available)
        let held = holds.withLockedValue { holds in
            holds.byID.reduce(into: Int64(0)) { sum, hold in
                if hold.value.device == space.device, hold.key != ticket?.id { sum += hold.value.still }
            }
        }
        return (space, held)
    }

    /// A new download's ticket: it holds nothing until `take` finds room for it.
    package func ticket() -> Ticket {
        Ticket(room: self, id: holds.withLockedValue { holds in
            holds.next += 1
            return holds.next
        })
    }

    /// Checks that `needed` more bytes of a file of `total` fit `directory`'s file system beside what the other
    /// running downloads still need, and holds them for `ticket` when they do; when they do not, the error
    /// says so in one line (category `fileIO`, reason `noRoom`), and nothing is held.
    fileprivate func take(_ ticket: Ticket, needed: Int64, total: Int64,
                          directory: OutputDirectory) throws(HaulError) {
        guard needed > 0, let free = free(in: directory.path, descriptor: directory.descriptor,
                                          device: directory.identity.device, except: ticket) else { return }
        let (space, held) = free
        let room = space.available - held
        guard needed > room else {
            holds.withLockedValue { $0.byID[ticket.id] = Hold(device: space.device, total: total,
                                                               completed: total - needed) }
            return
        }
        throw HaulError(.fileIO, Self.refusal(directory: directory.path, needed: needed, space: space, held: held),
                        reason: .noRoom(needed: needed))
    }

    /// "not enough free space: needs 50.0 MiB, 19.9 MiB free in /mnt/small (12.0 MiB of it still needed by
    /// running downloads)": the file's name and address are the line's own (`haul: NAME: ... (URL)`).
    static func refusal(directory: String, needed: Int64, space: Space, held: Int64) -> String {
        let free = ByteFormat.size(Swift.max(0, space.available))
        let heldWords = held > 0 ? " (\(ByteFormat.size(held)) of it still needed by running downloads)" : ""
        return "not enough free space: needs \(ByteFormat.size(needed)), \(free) free in \(directory)\(heldWords)"
    }

    fileprivate func progress(_ ticket: Ticket, completed: Int64) {
        holds.withLockedValue { holds in holds.byID[ticket.id]?.completed = completed }
    }

    fileprivate func release(_ ticket: Ticket) {
        holds.withLockedValue { _ = $0.byID.removeValue(forKey: ticket.id) }
    }

    /// One download's claim on room: made before it starts, holding what it still needs once `take` found room
    /// for it, until `release` (its end).
    package final class Ticket: Sendable {
        let room: Room
        let id: Int

        fileprivate init(room: Room, id: Int) {
            self.room = room
            self.id = id
        }

        /// See `Room.take`.
        func take(needed: Int64, total: Int64, directory: OutputDirectory) throws(HaulError) {
            try room.take(self, needed: needed, total: total, directory: directory)
        }

        /// The download has `completed` bytes of its file on disk: it still needs the rest.
        package func progress(completed: Int64) { room.progress(self, completed: completed) }

        package func release() { room.release(self) }
    }
}
