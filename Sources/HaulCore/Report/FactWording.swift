extension DownloadFact {
    /// The fact as one line for people (plain output, `--json`'s `message`, the TUI's details).
    package var sentence: String {
        switch self {
        case .retrying(let attempt, let of, let delay, let resumeAt, let reason):
            "\(reason.message); retry \(attempt) of \(of) in \(ByteFormat.fixed(delay, 1)) s"
                + (resumeAt > 0 ? ", resuming at \(ByteFormat.size(resumeAt))" : "")
        case .resumeRefused(let part, let reason):
            reason.sentence(part: part)
        case .partLeftAlone(let part, .otherURL(let url)):
            "\(part) belongs to another URL (\(url)); leaving it for that one"
        case .partLeftAlone(let part, .untrusted(let distrust)):
            "\(part) \(distrust.phrase); leaving it alone"
        case .savedAs(let wanted, let savedAs):
            "\(wanted) appeared during the download; saved as \(savedAs)"
        case .oneConnection(.noRanges):
            "the server does not accept ranges; using one connection"
        case .oneConnection(.notLimited(let rate)):
            "each connection brought \(ByteFormat.rate(rate)) or more: nothing limits one, so one goes on alone"
        case .oneConnection(.segmentRefused(let status)):
            "the server answered a segment's Range request with \(status); using one connection"
        case .split(let connections):
            "fetching over \(connections) connections"
        case .splitAgain(let connections, let rate):
            "the one connection slowed to \(ByteFormat.rate(rate)): fetching over \(connections) connections again"
        case .connectionDropped(let left, let reason):
            "a connection failed (\(reason.message)); its part goes to the other "
                + (left == 1 ? "connection" : "\(left) connections")
        case .damagedRefetched(let part, let bytes):
            "\(ByteFormat.size(bytes)) of \(part) failed their check after a crash; fetching them again"
        case .finishedEarlier:
            "already whole: an earlier run was stopped after the file took its name; nothing to fetch"
        case .previewSaved(let path):
            "partial preview saved: \(path)"
        case .limited(let rate):
            rate.map { "limited to \(ByteFormat.rate(Double($0)))" } ?? "no rate limit"
        case .refreshed(let url, let kept):
            "new address \(url): the same file; continuing from \(ByteFormat.size(kept)) on disk"
        case .sourceDropped(let url, let reason):
            "\(url) \(reason.phrase); dropped"
        case .sourceFailed(let url, let reason):
            "\(url) failed (\(reason.message)); its part goes to the other sources"
        case .pieceRefetched(let index, let url, let from):
            "piece \(index) failed its hash" + (url.map { " (\($0) sent it; dropped)" } ?? "")
                + "; fetched again from \(from)"
        case .category(let name, let directory):
            "category \(name): saving in \(directory)"
        case .filesRemoved(let files, let bytes):
            "removed with files: " + (files == 1 ? "1 file" : "\(files) files") + ", \(ByteFormat.size(bytes))"
        case .seeding(let ratio, let minutes):
            "verified; seeding " + (ratio.map { "until ratio \(ByteFormat.fixed($0, 1))" } ?? "")
                + (ratio != nil && minutes != nil ? " or " : "")
                + (minutes.map { "for \(ByteFormat.fixed($0, 0)) min" } ?? "")
                + (ratio == nil && minutes == nil ? "until stopped" : "")
        case .seeded(let uploaded, let ratio):
            "seeded \(ByteFormat.size(uploaded)), ratio \(ByteFormat.fixed(ratio, 2))"
        }
    }
}

extension ResumeRefusal {
    func sentence(part: String) -> String {
        switch self {
        case .noState: "\(part) has no resume state; starting over"
        case .unreadableState: "\(part).json is unreadable; starting over"
        case .otherURL(let url): "\(part) belongs to another URL (\(url)); starting over"
        case .shorterThanState: "\(part) is shorter than its state says; starting over"
        case .notWanted: "--no-resume: starting \(part) over"
        case .noValidators: "the server gave no ETag or Last-Modified to check \(part) against; starting over"
        case .refusedAt(let offset): "the server refused to resume at \(ByteFormat.size(offset)); starting over"
        case .validatorsChanged: "the file changed on the server (validators differ); starting over"
        case .rangeIgnored(let status): "the server ignored the Range request (answered \(status)); starting over"
        }
    }
}
