import FoundationEssentials

/// A metalink's `<pieces>` checked on the whole part, before the whole-file checksum and the name: each bad
/// piece is asked again of every source still usable, by its range. The first answer whose bytes hash right
/// replaces the piece on disk; a source whose bytes for it hash otherwise sent the bad piece (or would have):
/// it is dropped. A piece no source serves right ends the download (exit 9).
///
/// Asking every source for a bad piece, rather than only the one that wrote it, names the culprit without
/// tracking which source wrote which bytes across attempts, runs and crashes; it costs a piece per source,
/// and only for bad pieces.
extension Downloader {
    func checkPieces<C: Clock<Duration>>(_ execution: inout Execution, clock: C,
                                         events: (DownloadEvent) -> Void) async throws(HaulError) {
        guard let pieces = execution.job.pieces, !pieces.hashes.isEmpty else { return }
        let claim = execution.claim
        var size = claim.state?.total ?? -1
        if size < 0 { size = try claim.part.size() }
        let bad = try PieceCheck.badPieces(path: claim.partPath, pieces: pieces, size: size)
        for index in bad {
            try await refetch(piece: index, of: pieces, size: size, &execution, clock: clock, events: events)
        }
    }

    /// Piece `index` fetched again (see above): said with a fact, or the download's error.
    private func refetch<C: Clock<Duration>>(piece index: Int, of pieces: PieceHashes, size: Int64,
                                             _ execution: inout Execution, clock: C,
                                             events: (DownloadEvent) -> Void) async throws(HaulError) {
        let range = pieces.range(of: index, size: size)
        let pool = execution.sources
        let candidates: [(source: Int?, url: String)] = pool.map { pool in
            (0..<pool.count).filter(pool.isUsable).map { ($0, pool.url(of: $0)) }
        } ?? [(nil, execution.job.url)]
        var good: String?
        var culprits: [String] = []
        for candidate in candidates {
            // A source that fails here (its connection, its answer) proves nothing about the piece: it stays.
            guard let right = try? await fetchPiece(ByteRange(range.lowerBound, range.upperBound),
                                                    hash: pieces.hashes[index], algorithm: pieces.algorithm,
                                                    from: candidate.url, write: good == nil, execution, clock: clock)
            else { continue }
            if right {
                if good == nil { good = candidate.url }
                continue
            }
            let masked = URLRedaction.masked(candidate.url)
            culprits.append(masked)
            if let pool, let source = candidate.source, pool.drop(source, .otherBytes(offset: range.lowerBound)) {
                events(.fact(.sourceDropped(url: masked, reason: .otherBytes(offset: range.lowerBound))))
            }
        }
        if let pool { events(.sources(pool.statusesNow())) }
        guard let good else {
            execution.claim.removeState()
            let from = culprits.isEmpty ? "no source answered for it" : "from " + culprits.joined(separator: ", ")
            throw HaulError(.checksum, "piece \(index) (bytes \(range.lowerBound)-\(range.upperBound - 1)) failed "
                            + "its \(pieces.algorithm.rawValue) check \(from); the data stays in "
                            + FilePath.baseName(of: execution.claim.partPath), reason: .checksumMismatch)
        }
        events(.fact(.pieceRefetched(index: index, url: culprits.first, from: URLRedaction.masked(good))))
    }

    /// Asks `url` for `range` and hashes its bytes: whether they match `hash` (written into the part at their
    /// place as they come when `write`). Throws when the source does not answer with exactly that range.
    private func fetchPiece<C: Clock<Duration>>(_ range: ByteRange, hash: String, algorithm: DigestAlgorithm,
                                                from url: String, write: Bool, _ execution: Execution,
                                                clock: C) async throws(HaulError) -> Bool {
        let job = execution.job
        var request = HTTPRequest(url: url, options: job.transfer)
        request.headers = job.headers
        request.ownConnection = execution.ownConnection
        request.range = (range.start, range.end - 1)
        let transfer = driver.start(request, clock: clock)
        defer { transfer.cancel() }
        guard let context = DigestContext(algorithm) else { throw DigestContext.unavailable(algorithm) }
        var offset = range.start
        do {
            let head = try await transfer.head()
            try HTTPStatus.check(head)
            guard head.status == 206, case .range(let start, _, _) = try ResponseCheck.placement(
                of: head, asked: request.range, knownTotal: execution.claim.state?.total), start == range.start
            else { throw HaulError(.protocol, "the source did not answer the piece's range") }
            for try await batch in transfer.bytes {
                let failed: HaulError? = batch.withUnsafeBytes { bytes in
                    guard offset + Int64(bytes.count) <= range.end else {
                        return HaulError(.protocol, "the source sent more than the piece's range")
                    }
                    context.update(bytes)
                    if write {
                        do throws(HaulError) { try execution.claim.part.write(bytes, at: offset, alone: true) } catch { return error }
                    }
                    offset += Int64(bytes.count)
                    return nil
                }
                if let failed { throw failed }
            }
        } catch {
            throw HaulError.from(error)
        }
        return offset == range.end && context.hex() == hash
    }
}
