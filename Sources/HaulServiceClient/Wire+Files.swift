import HaulCore

extension Wire {
    /// The answer to `POST /v1/downloads/remove-files` (`haul rm --files`, the TUI's `D`): the downloads it
    /// applied to, each file deleted, each name left because it is not haul's, and each that could not be deleted.
    package struct FilesRemoval: Codable, Sendable, Equatable {
        package var ids: [DownloadID]
        package var removed: [File] = []
        package var left: [Problem] = []
        package var failed: [Problem] = []

        package init(ids: [DownloadID]) { self.ids = ids }

        package struct File: Codable, Sendable, Equatable {
            package var id: DownloadID
            package var path: String
            package var bytes: Int64

            package init(id: DownloadID, path: String, bytes: Int64) {
                self.id = id
                self.path = path
                self.bytes = bytes
            }
        }

        package struct Problem: Codable, Sendable, Equatable {
            package var id: DownloadID
            package var path: String
            package var reason: String

            package init(id: DownloadID, path: String, reason: String) {
                self.id = id
                self.path = path
                self.reason = reason
            }
        }

        /// Adds what deleting download `id`'s files came to.
        package mutating func add(_ outcome: OwnFiles.Outcome, of id: DownloadID) {
            removed += outcome.removed.map { File(id: id, path: $0.path, bytes: $0.bytes) }
            left += outcome.left.map { Problem(id: id, path: $0.path, reason: $0.reason) }
            failed += outcome.failed.map { Problem(id: id, path: $0.path, reason: $0.reason) }
        }
    }
}
