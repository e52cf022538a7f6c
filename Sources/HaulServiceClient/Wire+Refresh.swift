import HaulCore

extension Wire {
    /// `POST /v1/downloads/refresh`: give download `id` the address `url` (`haul refresh`, the TUI's `u`).
    package struct Refresh: Codable, Sendable, Equatable {
        package var id: DownloadID
        package var url: String

        package init(id: DownloadID, url: String) {
            self.id = id
            self.url = url
        }
    }

    /// Its answer: the download continues from `kept` bytes on disk (0: it starts from the new address).
    package struct Refreshed: Codable, Sendable, Equatable {
        package var id: DownloadID
        package var kept: Int64

        package init(id: DownloadID, kept: Int64) {
            self.id = id
            self.kept = kept
        }
    }

    /// A refresh refused or failed: the line, and the exit code `haul refresh` ends with (2 for an unknown id, a
    /// download that runs, or another file; the request's own for an address that could not be asked).
    package struct RefreshFailure: Codable, Sendable, Equatable, Error {
        package var error: String
        package var exitCode: Int32

        package init(error: String, exitCode: Int32) {
            self.error = error
            self.exitCode = exitCode
        }
    }
}
