import Foundation
import HaulCore

/// A download as aria2's `tellStatus` shows it, and aria2's words for haul's states and failures.
enum Aria2Status {
    /// The size of aria2's "pieces", for the clients that show `numPieces` (haul keeps ranges, not pieces).
    static let pieceLength: Int64 = 1 << 20

    /// active (connecting, downloading), waiting (queued, scheduled, and no space: it starts by itself once
    /// there is room), paused, error (failed), complete (done), removed (cancelled).
    static func name(of state: DownloadState) -> String {
        switch state {
        case .queued, .scheduled, .noSpace: "waiting"
        case .connecting, .downloading: "active"
        case .paused: "paused"
        case .done: "complete"
        case .failed: "error"
        case .cancelled: "removed"
        }
    }

    /// In aria2's lists: active, waiting (with paused), or stopped.
    enum List { case active, waiting, stopped }

    static func list(of state: DownloadState) -> List {
        switch state {
        case .connecting, .downloading: .active
        case .queued, .scheduled, .paused, .noSpace: .waiting
        case .done, .failed, .cancelled: .stopped
        }
    }

    /// The notification a WebSocket client gets when a download goes from `before` to `after`.
    static func notification(from before: DownloadState?, to after: DownloadState) -> String? {
        switch after {
        case .connecting: before?.isActive == true ? nil : "aria2.onDownloadStart"
        case .downloading: before?.isActive == true ? nil : "aria2.onDownloadStart"
        case .paused: "aria2.onDownloadPause"
        case .cancelled: "aria2.onDownloadStop"
        case .done: "aria2.onDownloadComplete"
        case .failed: "aria2.onDownloadError"
        case .queued, .scheduled, .noSpace: nil
        }
    }

    /// aria2's exit code for a failure ("1"-"32"): what its clients show and test. Read from the failure's
    /// category and typed reason, never from its message: 2 timeout (a stall too), 3 not found (404, 410),
    /// 6 other network errors, 9 disk full, 17 other file I/O, 21 an FTP command that failed, 22 other HTTP
    /// errors and malformed answers, 24 authorisation (an FTP or SSH login too), 28 usage, 29 server
    /// overloaded (503), 31 removed, 32 checksum, 1 anything else (an SSH host key refused among them).
    /// A missing file over FTP or SFTP is 3, as aria2 says it of FTP's 550.
    static func errorCode(_ error: HaulError) -> Int {
        switch error.category {
        case .network:
            switch error.reason {
            case .timedOut, .stalled: return 2
            default: return 6
            }
        case .server:
            switch error.reason {
            case .httpStatus(404), .httpStatus(410), .remoteFileNotFound: return 3
            case .httpStatus(503): return 29
            default: return 22
            }
        case .protocol: return error.reason == .ftpCommandFailed ? 21 : 22
        case .authentication: return 24
        case .checksum: return 32
        case .fileIO:
            switch error.reason {
            case .diskFull, .noRoom: return 9
            default: return 17
            }
        case .usage: return 28
        case .cancelled, .interrupted, .terminated, .hangUp: return 31
        case .tls, .other: return 1
        }
    }

    /// The keys `tellStatus` answers with, in aria2's order; `keys` (when given) picks some. `completed`
    /// gives the byte ranges on disk (asked only when `bitfield` is wanted and the download is not done).
    /// `links`: the GIDs of the downloads its metalink was followed by, and of the one whose metalink it
    /// came from (aria2's `followedBy` and `following`, each only when there is one).
    static func status(of entry: Roster.Entry, job: DownloadJob?, keys: Set<String>?, at now: Moment,
                       links: (followedBy: [String], following: String?) = ([], nil),
                       completed ranges: () -> [ByteRange] = { [] }) -> JSON {
        var members: [(String, JSON)] = []
        func put(_ key: String, _ value: @autoclosure () -> JSON) {
            if keys == nil || keys!.contains(key) { members.append((key, value())) }
        }
        let total = entry.total ?? 0
        let completed = entry.state == .done ? Swift.max(entry.completed, total) : entry.completed
        let active = entry.state.isActive
        let segments = job?.segments ?? 1
        put("gid", .string(entry.gid))
        put("status", .string(name(of: entry.state)))
        put("totalLength", .number(total))
        put("completedLength", .number(completed))
        put("uploadLength", "0")
        let pieces = total > 0 ? (total + pieceLength - 1) / pieceLength : 0
        if pieces > 0 {
            put("bitfield", .string(bitfield(pieces: pieces, total: total,
                                             completed: entry.state == .done ? [ByteRange(0, total)] : ranges())))
        }
        put("downloadSpeed", .number(Int64(entry.record.speed(at: now).rounded())))
        put("uploadSpeed", "0")
        put("connections", .number(active ? connections(of: entry, segments: segments) : 0))
        put("numPieces", .number(pieces))
        put("pieceLength", .number(pieceLength))
        // Where the file is: a category's folder once one placed it, else the output directory.
        put("dir", .string(entry.record.category != nil ? entry.path.map(FilePath.parent) ?? entry.directory : entry.directory))
        put("files", files(of: entry))
        switch entry.state {
        case .done:
            put("errorCode", "0")
            put("errorMessage", "")
        case .failed(let error):
            put("errorCode", .number(errorCode(error)))
            put("errorMessage", .string(error.message))
        case .noSpace(let why):
            // Waiting, not failed: no code, but the reason a front end can show.
            put("errorMessage", .string(why.message))
        case .cancelled:
            put("errorCode", "31")
            put("errorMessage", "removed by the user")
        default:
            break
        }
        if !links.followedBy.isEmpty { put("followedBy", .array(links.followedBy.map { .string($0) })) }
        if let following = links.following { put("following", .string(following)) }
        return .object(members)
    }

    /// aria2's `bitfield`: hex, high bit first, one bit a piece of `pieceLength`, set when the piece lies
    /// wholly within the completed ranges; the bits past the last piece are zero. The first 3 of 7 pieces
    /// done: "e0".
    static func bitfield(pieces: Int64, total: Int64, completed ranges: [ByteRange]) -> String {
        var bytes = [UInt8](repeating: 0, count: Int((pieces + 7) / 8))
        // Sorted and joined (a state file is written so, but one edited by hand need not be).
        for range in ByteRange.merged(ranges) {
            let first = (range.start + pieceLength - 1) / pieceLength
            // The last piece ends at `total`, not at a multiple of the piece length.
            let end = range.end >= total ? pieces : Swift.min(range.end / pieceLength, pieces)
            var piece = Swift.max(first, 0)
            while piece < end {
                bytes[Int(piece / 8)] |= 0x80 >> UInt8(piece % 8)
                piece += 1
            }
        }
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        hex.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: hex, as: UTF8.self)
    }

    /// The completed ranges a download's `NAME.part.json` records (every checkpoint, a quarter second
    /// apart while it runs, and at each pause or stop), when it is this download's: same URL and size.
    /// None when there is no such file or it cannot be trusted (a link is not followed, a FIFO not opened
    /// for long, a large file not read).
    static func completedRanges(of entry: Roster.Entry) -> [ByteRange] {
        guard case .found(let state) = ResumeState.load(from: path(of: entry) + ".part.json"),
            state.belongs(to: entry.url), entry.total == nil || state.total == entry.total
        else { return [] }
        return state.completed
    }

    static func path(of entry: Roster.Entry) -> String {
        entry.path ?? FilePath.join(entry.directory, entry.name)
    }

    /// `getFiles`: one file per download.
    static func files(of entry: Roster.Entry) -> JSON {
        let total = entry.total ?? 0
        let completed = entry.state == .done ? Swift.max(entry.completed, total) : entry.completed
        return [[
            "index": "1",
            "path": .string(path(of: entry)),
            "length": .number(total),
            "completedLength": .number(completed),
            "selected": "true",
            "uris": uris(of: entry),
        ]]
    }

    /// `getUris` (and each file's `uris`): every source, its password masked, "used" once the download has
    /// asked it (as the engine reports them) and "waiting" until then; before any report, the first is the
    /// one in use.
    static func uris(of entry: Roster.Entry) -> JSON {
        let reported = entry.record.sources
        if !reported.isEmpty {
            return .array(reported.map { source -> JSON in
                ["uri": .string(source.url), "status": .string(source.state == .waiting ? "waiting" : "used")]
            })
        }
        let urls = entry.sources.isEmpty ? [entry.url] : entry.sources
        return .array(urls.enumerated().map { index, url -> JSON in
            ["uri": .string(url), "status": .string(index == 0 ? "used" : "waiting")]
        })
    }

    /// `getServers`' servers of the one file: each source connections fetch from now, with its speed; before
    /// the engine reports its sources, the first, with the download's speed.
    static func servers(of entry: Roster.Entry, at now: Moment) -> JSON {
        let active = entry.record.sources.filter { $0.state == .active }
        if !active.isEmpty {
            return .array(active.map { source -> JSON in
                ["uri": .string(source.url), "currentUri": .string(source.url),
                 "downloadSpeed": .number(Int64(source.bytesPerSecond.rounded()))]
            })
        }
        let url = entry.sources.first ?? entry.url
        return [["uri": .string(url), "currentUri": .string(url),
                 "downloadSpeed": .number(Int64(entry.record.speed(at: now).rounded()))]]
    }

    /// Connections of a running download: as its sources report them, else its segments.
    static func connections(of entry: Roster.Entry, segments: Int) -> Int {
        entry.record.sources.isEmpty ? segments : entry.record.sources.reduce(0) { $0 + $1.connections }
    }
}

/// The aria2 face's global options: what `changeGlobalOption` changes and `getGlobalOption` shows. The
/// defaults are aria2's (one connection per server unless a client asks for more).
struct Aria2Globals: Sendable, Equatable {
    var split = 5
    var connectionsPerServer = 1
    /// `max-download-limit`: each new download's own cap.
    var downloadLimit: Int64?
    /// `max-overall-download-limit`.
    var overallLimit: Int64?
    /// `max-concurrent-downloads`.
    var concurrency = 4
}
