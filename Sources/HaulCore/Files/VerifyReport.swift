/// What `haul verify` found in a part (or a finished file that still has its record).
package struct VerifyReport: Sendable, Equatable {
    /// The data file checked, as given or found.
    var path: String
    var total: Int64?
    /// Bytes whose record matches, and in how many records.
    var good: Int64 = 0
    var goodBlocks = 0
    /// Bytes whose record does not match (now marked missing), and in how many records.
    package var damaged: Int64 = 0
    var damagedBlocks = 0
    /// Bytes the state says are on disk that no record covers (a journal lost to a power loss, or a part
    /// from before journals): kept, but not checked.
    var unchecked: Int64 = 0
    /// Bytes of the file not on disk yet (nil when the size is unknown).
    var missing: Int64?

    /// One line for people.
    package var sentence: String {
        var parts = ["\(ByteFormat.size(good)) good in \(goodBlocks) block\(goodBlocks == 1 ? "" : "s")"]
        if damaged > 0 {
            parts.append("\(ByteFormat.size(damaged)) damaged in \(damagedBlocks) block\(damagedBlocks == 1 ? "" : "s") "
                         + "(marked missing: the next run fetches them again)")
        }
        if unchecked > 0 { parts.append("\(ByteFormat.size(unchecked)) on disk without a record to check") }
        if let missing, missing > 0 { parts.append("\(ByteFormat.size(missing)) missing") }
        return "\(path): " + parts.joined(separator: ", ")
    }
}
