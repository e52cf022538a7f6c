import FoundationEssentials

/// The head of an FTP, SFTP or SCP transfer. Those protocols send no HTTP head, but the download reads one:
/// haul writes it from what libcurl learnt of the file before its first byte, in HTTP's terms, so that one set
/// of rules (`DownloadStateMachine`, `ResponseCheck`, `SegmentedFetch`) places, resumes and splits every
/// download.
///
/// - The size and the modification time (MDTM; the SFTP attributes) are the file's version, as an ETag is an
///   HTTP file's: the head carries both in an `ETag` (`"SIZE-SECONDS"`) and the time in `Last-Modified`. A
///   resume whose part has another ETag starts over ("changed on the server"), never a mix of two versions.
/// - A range that was asked for is answered `206` with the `Content-Range` libcurl's offset (REST, an SFTP
///   seek) gives; `416` when the offset is at or past the file's end, as an HTTP server says it.
/// - SCP cannot seek: `200` and the whole file, without `Accept-Ranges` or a version (nothing to resume by).
extension ResponseHead {
    struct RemoteFileFacts: Equatable {
        /// The protocol can start at an offset (FTP, SFTP; not SCP).
        var seeks: Bool
        /// The range asked for, if any: its first byte and its last (nil: to the end).
        var rangeFirst: Int64?
        var rangeLast: Int64?
        /// What libcurl expects this transfer to bring (`CURLINFO_CONTENT_LENGTH_DOWNLOAD_T`), nil when unknown:
        /// from the range's first byte to the file's end.
        var length: Int64?
        /// The file's modification time in seconds since 1970 (`CURLINFO_FILETIME_T`), nil when unknown.
        var modified: Int64?
        /// The transfer ended without a byte of body.
        var bodyless: Bool
        /// libcurl refused the range's offset as past the file's end.
        var pastEnd: Bool
    }

    static func remoteFile(_ facts: RemoteFileFacts, url: String) -> ResponseHead {
        var headers: [(name: String, value: String)] = []
        func head(_ status: Int) -> ResponseHead {
            ResponseHead(status: status, headers: headers, effectiveURL: url, synthesized: true)
        }
        guard facts.seeks else {
            if let length = facts.length { headers.append(("Content-Length", "\(length)")) }
            return head(200)
        }
        if facts.pastEnd { return head(416) }
        let first = facts.rangeFirst ?? 0
        // Ended well with nothing to send from a later byte: the file ends there (libcurl asks for nothing then).
        let total: Int64? = facts.bodyless && first > 0 ? first : facts.length.map { first + $0 }
        headers.append(("Accept-Ranges", "bytes"))
        if let total, let modified = facts.modified {
            headers.append(("ETag", "\"\(total)-\(modified)\""))
            headers.append(("Last-Modified", HTTPDate.format(Date(timeIntervalSince1970: Double(modified)))))
        }
        // An empty file has no range to send: all of it, as an HTTP server answers.
        guard facts.rangeFirst != nil, total != 0 else {
            if let total { headers.append(("Content-Length", "\(total)")) }
            return head(200)
        }
        if let total {
            if first >= total, first > 0 {
                headers.append(("Content-Range", "bytes */\(total)"))
                return head(416)
            }
            let last = Swift.min(facts.rangeLast ?? total - 1, total - 1)
            headers.append(("Content-Range", "bytes \(first)-\(last)/\(total)"))
            headers.append(("Content-Length", "\(last - first + 1)"))
        } else if let last = facts.rangeLast {
            headers.append(("Content-Range", "bytes \(first)-\(last)/*"))
        }
        // Neither a size nor a range's end: no Content-Range, which the download refuses (exit 7) rather than
        // guess where the bytes belong.
        return head(206)
    }
}
