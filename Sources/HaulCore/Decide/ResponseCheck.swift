/// Checks an answer against the request that was sent, before a byte of its body is written: where the
/// body belongs in the file, or why it belongs nowhere.
///
/// A `206` is only ever taken for the range that was asked for: a different first byte, a range running
/// past the one asked for (or short of the end of an open-ended one), a total that contradicts what is
/// known, or a `Content-Length` that disagrees with `Content-Range` is a protocol error, never a wrong file
/// named as done. A `200` to a ranged request is the whole file (the server ignored `Range`, or `If-Range`
/// found the file changed): the caller starts over from byte 0.
enum ResponseCheck {
    /// Where an answer's body goes.
    enum Placement: Equatable {
        /// The whole file from byte 0; its size when the server said it.
        case whole(total: Int64?)
        /// Exactly the bytes `first...last` of a file of `total` bytes (nil: the server did not say).
        case range(first: Int64, last: Int64, total: Int64?)

        /// The file offset of the body's first byte.
        var start: Int64 {
            switch self {
            case .whole: 0
            case .range(let first, _, _): first
            }
        }

        /// The file offset just past the body's last byte, when known.
        var end: Int64? {
            switch self {
            case .whole(let total): total
            case .range(_, let last, _): last + 1
            }
        }

        var isRange: Bool {
            if case .range = self { true } else { false }
        }

        var total: Int64? {
            switch self {
            case .whole(let total), .range(_, _, let total): total
            }
        }
    }

    /// Where the body of `head` (a 2xx answer) goes, given the range asked for (`first`, and `last` or nil
    /// for "to the end"; nil for the whole file) and the file size known from earlier answers.
    static func placement(of head: ResponseHead, asked: (first: Int64, last: Int64?)?,
                          knownTotal: Int64?) throws(HaulError) -> Placement {
        if let problem = head.framingProblem { throw HaulError(.protocol, problem) }
        guard head.status == 206 else { return .whole(total: head.contentLength) }
        guard let asked else {
            throw HaulError(.protocol, "the server answered 206 Partial Content to a request for the whole file")
        }
        let wanted = "bytes \(asked.first)-\(asked.last.map(String.init) ?? "")"
        if let type = head[.contentType], type.lowercased().hasPrefix("multipart/byteranges") {
            throw HaulError(.protocol, "the server answered several ranges to a request for \(wanted)")
        }
        guard let range = head.contentRange else {
            throw HaulError(.protocol, "the server answered 206 without a valid Content-Range to a request for \(wanted)")
        }
        let answered = "bytes \(range.first)-\(range.last)/\(range.total.map(String.init) ?? "*")"
        let total = range.total ?? knownTotal
        var wrong = range.first != asked.first || (asked.last.map { range.last > $0 } ?? false)
        if let total {
            // Open-ended: the rest of the file, all of it; bounded: no further than the file goes.
            wrong = wrong || range.last >= total
                || (asked.last == nil && range.last != total - 1)
                || (asked.last.map { range.last < Swift.min($0, total - 1) } ?? false)
        }
        if wrong {
            throw HaulError(.protocol, "the server answered \(answered) to a request for \(wanted)")
        }
        // A head haul made for FTP or SFTP claims nothing: a new size there is a new version of the file,
        // which its ETag (size and time) says, and the caller starts over (`otherVersion`).
        if let knownTotal, let stated = range.total, stated != knownTotal, !head.synthesized {
            throw HaulError(.protocol, "the server says the file has \(stated) bytes, not \(knownTotal) as before, "
                            + "yet claims it is unchanged")
        }
        if let length = head.contentLength, length != range.last - range.first + 1 {
            throw HaulError(.protocol, "the server's Content-Length \(length) contradicts its Content-Range \(answered)")
        }
        return .range(first: range.first, last: range.last, total: total)
    }

    /// How `head` fails to show the version of the file that `etag` and `lastModified` were taken from; nil
    /// when it shows that version. The validator `If-Range` carried (the ETag, else Last-Modified) must come
    /// back the same (RFC 9110 has a `206` carry the ETag a `200` would), and a Last-Modified that both carry
    /// must agree. A server that ignores `If-Range` answers a range of a new version with `206`, with the new
    /// validators or with none, and that range spliced onto the old one's bytes would be a file that never
    /// existed.
    static func otherVersion(of head: ResponseHead, etag: String?, lastModified: String?) -> String? {
        let nowTag = head[.eTag]
        let nowDate = head[.lastModified]
        if let etag {
            guard let nowTag else { return "no ETag where the part has \(etag)" }
            if nowTag != etag { return "ETag \(nowTag) where the part has \(etag)" }
        } else if let lastModified, nowDate == nil {
            return "no Last-Modified where the part has \(lastModified)"
        }
        if let lastModified, let nowDate, nowDate != lastModified {
            return "Last-Modified \(nowDate) where the part has \(lastModified)"
        }
        return nil
    }
}
