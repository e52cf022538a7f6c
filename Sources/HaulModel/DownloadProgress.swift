/// Where a download stands after a batch.
package struct DownloadProgress: Sendable, Equatable, Codable {
    /// Bytes of the file on disk so far (including what was there before a resume).
    package var completed: Int64
    /// Bytes in this batch.
    package var batchBytes: Int64
    /// The whole file's size, when known.
    package var total: Int64?
    /// Recent receive rate.
    package var bytesPerSecond: Double

    package init(completed: Int64, batchBytes: Int64, total: Int64?, bytesPerSecond: Double) {
        self.completed = completed
        self.batchBytes = batchBytes
        self.total = total
        self.bytesPerSecond = bytesPerSecond
    }
}
