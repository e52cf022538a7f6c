/// RFC 6249 in a download: the first answer of a plain HTTP(S) URL may name the file's mirrors
/// (`Link: <URL>; rel=duplicate; pri=N`) and its digest (RFC 3230's `Digest: SHA-256=...`), as MirrorBrain
/// servers send them. The mirrors become further sources of the download, the digest its checksum.
extension Downloader {
    /// At most this many sources are taken from one answer's `Link` headers: a server that lists thousands
    /// (or a hostile one) costs no more than a metalink's long list would.
    static let linkedSourcesLimit = 32

    /// Reads the run's first answer, once: a 200 or 206 from HTTP(S) (not a head haul made for FTP or SFTP).
    /// Its duplicates join the job's sources after those it has, in their `pri` order, a URL it has already
    /// taken once, before the segments are assigned: `-s N` then spreads over them as over `--mirror`s. Its
    /// digest is the checksum when the job has none (`--checksum` and a metalink's hashes win), computed as the
    /// bytes are written, from here on, as `--checksum`'s is.
    func readLinks(_ head: ResponseHead, _ execution: inout Execution, events: (DownloadEvent) -> Void) {
        guard !execution.linksRead else { return }
        execution.linksRead = true
        let scheme = head.effectiveURL.prefix { $0 != ":" }.lowercased()
        guard !head.synthesized, scheme == "http" || scheme == "https", head.status == 200 || head.status == 206
        else { return }
        let found = MirrorLinks.read(headers: head.headers.map { "\($0.name): \($0.value)" })
        if execution.job.checksum == nil, let checksum = found.checksum {
            execution.job.checksum = checksum
            execution.claim.part.startDigest(checksum.algorithm)
        }
        var known = Set(execution.job.sources.map(\.url))
        var added: [DownloadSource] = []
        for source in found.sources where added.count < Self.linkedSourcesLimit && known.insert(source.url).inserted {
            added.append(source)
        }
        guard !added.isEmpty else { return }
        execution.job.sources += added
        if let pool = execution.sources {
            pool.add(urls: added.map(\.url))
        } else {
            execution.sources = SourcePool.of(execution.job)
        }
        if let pool = execution.sources { events(.sources(pool.statusesNow())) }
    }
}
