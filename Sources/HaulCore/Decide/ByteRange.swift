/// A half-open byte range `[start, end)`.
package struct ByteRange: Codable, Equatable, Sendable {
    package var start: Int64
    package var end: Int64

    package init(_ start: Int64, _ end: Int64) {
        self.start = start
        self.end = end
    }

    package var count: Int64 { end - start }

    /// `ranges` sorted and merged (touching or overlapping ranges become one; empty ones go).
    package static func merged(_ ranges: [ByteRange]) -> [ByteRange] {
        var merged: [ByteRange] = []
        for range in ranges.sorted(by: { $0.start < $1.start }) where range.end > range.start {
            if let last = merged.last, range.start <= last.end {
                merged[merged.count - 1].end = Swift.max(last.end, range.end)
            } else {
                merged.append(range)
            }
        }
        return merged
    }
}
