import CTorrent
import HaulCore

/// What a torrent is added from: a .torrent's metadata or a magnet's info-hashes, as libtorrent parsed them
/// (`haul_torrent_params`). Owns its C value; `@unchecked Sendable` because it is only read after it is made,
/// and changed (`setSavePath`, `rename`...) by the one task that adds it.
package final class TorrentMetadata: @unchecked Sendable {
    let params: OpaquePointer

    /// A .torrent file larger than this is refused before it is parsed: the largest real ones (a million
    /// files, or 4 MiB pieces of a terabyte) are a few tens of MiB.
    package static let maxTorrentBytes = 64 << 20

    init(params: OpaquePointer) { self.params = params }

    deinit { haul_torrent_params_free(params) }

    /// A .torrent's bytes; a malformed one is a protocol error (exit 7) whose line says what libtorrent found.
    package static func parse(torrent bytes: [UInt8]) throws(HaulError) -> TorrentMetadata {
        guard bytes.count <= maxTorrentBytes else {
            throw HaulError(.protocol, "not a torrent: larger than \(ByteFormat.size(Int64(maxTorrentBytes)))")
        }
        let made = bytes.withUnsafeBufferPointer { buffer in
            withError { haul_torrent_params_from_buffer(buffer.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, buffer.count, $0, $1) }
        }
        guard let params = made.value else { throw HaulError(.protocol, "not a valid torrent: \(made.error)") }
        let metadata = TorrentMetadata(params: params)
        if metadata.files.contains(where: { $0.kind == .symlink }) {
            throw HaulError(.protocol, "the torrent holds symbolic links, which haul does not create")
        }
        return metadata
    }

    /// A `magnet:?xt=urn:btih:...` (40 hex or 32 base32 digits) or `urn:btmh:` (v2) link; a bad one is a usage
    /// error (exit 2), as a bad URL is.
    package static func parse(magnet: String) throws(HaulError) -> TorrentMetadata {
        let made = withError { haul_torrent_params_from_magnet(magnet, $0, $1) }
        guard let params = made.value else { throw HaulError(.usage, "not a valid magnet link: \(made.error)") }
        return TorrentMetadata(params: params)
    }

    /// Resume data haul saved (`TorrentResume`); nil when it cannot be read (the run starts without it).
    static func parse(resume bytes: [UInt8]) -> TorrentMetadata? {
        let made = bytes.withUnsafeBufferPointer { buffer in
            withError { haul_torrent_params_from_resume(buffer.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, buffer.count, $0, $1) }
        }
        return made.value.map(TorrentMetadata.init(params:))
    }

    package var hasMetadata: Bool { haul_torrent_params_has_metadata(params) != 0 }

    /// The info-hashes, lower-case hex; nil for a version the torrent lacks.
    package var infoHashes: (v1: String?, v2: String?) {
        var v1 = [CChar](repeating: 0, count: 41)
        var v2 = [CChar](repeating: 0, count: 65)
        haul_torrent_params_info_hashes(params, &v1, &v2)
        let one = text(v1), two = text(v2)
        return (one.isEmpty ? nil : one, two.isEmpty ? nil : two)
    }

    /// The v1 info-hash, else the v2 one: the torrent's key in haul's file names.
    package var key: String { infoHashes.v1 ?? infoHashes.v2 ?? "unknown" }

    /// The metadata's name, or a magnet's `dn=` (may be empty); as the torrent says, not sanitised.
    package var name: String {
        var buffer = [CChar](repeating: 0, count: 4096)
        haul_torrent_params_name(params, &buffer, buffer.count)
        return text(buffer)
    }

    package var trackerCount: Int { Int(haul_torrent_params_tracker_count(params)) }

    /// The files of the metadata (none before a magnet has it), in the torrent's order.
    package var files: [TorrentFile] {
        let count = Int(haul_torrent_params_file_count(params))
        var result: [TorrentFile] = []
        result.reserveCapacity(count)
        var path = [CChar](repeating: 0, count: 8192)
        for index in 0..<count {
            var file = haul_torrent_file()
            guard haul_torrent_params_file(params, Int32(index), &file, &path, path.count) == 0 else { continue }
            let kind: TorrentFile.Kind = file.kind == 1 ? .pad : (file.kind == 2 ? .symlink : .regular)
            result.append(TorrentFile(index: index, path: text(path), size: file.size, kind: kind))
        }
        return result
    }

    package func setSavePath(_ path: String) { haul_torrent_params_set_save_path(params, path) }
    package func rename(file index: Int, to path: String) { haul_torrent_params_rename_file(params, Int32(index), path) }
    package func setPriority(file index: Int, _ priority: Int) { haul_torrent_params_set_file_priority(params, Int32(index), Int32(priority)) }
    package func addTracker(_ url: String) { haul_torrent_params_add_tracker(params, url) }
}

/// One file of a torrent's metadata.
package struct TorrentFile: Sendable, Equatable {
    package enum Kind: Sendable { case regular, pad, symlink }
    package var index: Int
    /// Its path in the torrent ('/' between parts), as the metadata gives it: hostile input.
    package var path: String
    package var size: Int64
    package var kind: Kind

    package init(index: Int, path: String, size: Int64, kind: Kind) {
        self.index = index
        self.path = path
        self.size = size
        self.kind = kind
    }
}

/// Calls `body` with an error buffer; its result and the buffer's words.
func withError<T>(_ body: (UnsafeMutablePointer<CChar>, Int) -> T?) -> (value: T?, error: String) {
    var buffer = [CChar](repeating: 0, count: 512)
    let value = buffer.withUnsafeMutableBufferPointer { body($0.baseAddress!, $0.count) }
    return (value, text(buffer))
}

/// A C string in a buffer, up to its NUL, as UTF-8 (bytes that are not become U+FFFD).
func text(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

extension TorrentMetadata {
    /// The path resume data says file `index` has now (relative to the save path), if it names one.
    func renamedPath(file index: Int) -> String? {
        var buffer = [CChar](repeating: 0, count: 8192)
        guard haul_torrent_params_renamed_file(params, Int32(index), &buffer, buffer.count) == 1 else { return nil }
        return text(buffer)
    }
}

extension TorrentMetadata {
    /// Takes `other`'s metadata (a magnet's, fetched), keeping this one's trackers.
    func takeMetadata(of other: TorrentMetadata) { haul_torrent_params_take_metadata(params, other.params) }
    func setUploadMode(_ on: Bool) { haul_torrent_params_set_upload_mode(params, on ? 1 : 0) }
}
