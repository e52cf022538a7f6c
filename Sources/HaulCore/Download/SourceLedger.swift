import Glibc

/// Which bytes of a download from several sources each source wrote, and the checks of their bytes still
/// to make: the first range asked of a source begins a little before its segment (`SegmentedFetch`), and
/// those overlap bytes must equal what another source wrote there. A source whose bytes differ is dropped
/// and everything it wrote is fetched again from the others.
///
/// A check waits until its bytes are on disk, written by sources not themselves waiting for a check (the
/// probe's source, sources that passed theirs, a source with no overlap, bytes of an earlier run): a source
/// is only ever compared with bytes already trusted, so one bad mirror never has a good one dropped.
struct SourceLedger {
    struct Check {
        let source: Int
        let range: ByteRange
        let bytes: [UInt8]
    }

    /// What a failed check drops: the source, the first offset whose byte differs, and the ranges it wrote.
    struct Drop {
        let source: Int
        let offset: Int64
        let ranges: [ByteRange]
    }

    private var written: [[ByteRange]]
    private var dropped: Set<Int> = []
    private(set) var checks: [Check] = []

    init(sources: Int) {
        written = Array(repeating: [], count: sources)
    }

    /// `range` came from `source`: false when that source was dropped (its bytes are not kept).
    mutating func fetched(_ range: ByteRange, from source: Int) -> Bool {
        guard !dropped.contains(source) else { return false }
        if let last = written[source].last, last.end == range.start {
            written[source][written[source].count - 1] = ByteRange(last.start, range.end)
        } else {
            written[source].append(range)
        }
        return true
    }

    mutating func expect(_ check: Check) {
        guard !dropped.contains(check.source) else { return }
        checks.append(check)
    }

    /// Makes every check whose bytes are on disk (`completed`) and trusted, reading them with `read`; with
    /// `force` (the file is whole) every check whose bytes are on disk. Returns the source to drop (at most one:
    /// its bytes leave the disk's account, and the caller settles again with the rest).
    mutating func settle(completed: [ByteRange], force: Bool = false, read: (ByteRange) -> [UInt8]?) -> [Drop] {
        var progressed = true
        while progressed && !checks.isEmpty {
            progressed = false
            let waiting = Set(checks.map(\.source))
            for index in checks.indices.reversed() {
                let check = checks[index]
                guard ByteRange.subtract(completed, from: check.range).isEmpty else { continue }
                let writers = written.indices.filter { source in
                    written[source].contains { $0.start < check.range.end && check.range.start < $0.end }
                }
                // Never against its own bytes (its connection may have taken that range since): that proves nothing.
                guard !writers.contains(check.source), force || !writers.contains(where: waiting.contains),
                    let disk = read(check.range)
                else { continue }
                checks.remove(at: index)
                progressed = true
                guard let differs = Self.firstDifference(disk, check.bytes) else { continue }
                // What is on disk changes with a drop (its bytes go): the caller settles again after.
                return [drop(check.source, at: check.range.start + Int64(differs))]
            }
        }
        return []
    }

    /// `source` is dropped: its checks go, and the ranges it wrote are returned (no longer its).
    mutating func drop(_ source: Int, at offset: Int64) -> Drop {
        dropped.insert(source)
        checks.removeAll { $0.source == source }
        defer { written[source] = [] }
        return Drop(source: source, offset: offset, ranges: written[source])
    }

    /// The first index where `a` and `b` differ (the shorter one's end when one is a prefix); nil when equal.
    static func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> Int? {
        let common = Swift.min(a.count, b.count)
        for index in 0..<common where a[index] != b[index] { return index }
        return a.count == b.count ? nil : common
    }

    /// `range`'s bytes as the part holds them now; nil when they cannot be read.
    static func read(_ part: PartFile, _ range: ByteRange) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: Int(range.count))
        let got = try? part.withDescriptor { fd throws(HaulError) in
            bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(range.start)) }
        }
        return got == Int(range.count) ? bytes : nil
    }
}
