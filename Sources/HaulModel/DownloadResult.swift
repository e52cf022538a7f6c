/// A finished download.
package struct DownloadResult: Sendable, Equatable, Codable {
    /// The file's name and where it is.
    package var file: String
    package var path: String
    package var bytes: Int64
    /// The target existed and `--skip-existing` left it alone, or (`notModified`) `-N` found it current.
    package var skipped: Bool
    /// `-N`: the server answered `304 Not Modified`, so the file was kept.
    package var notModified: Bool
    /// The media type the server gave the file (`Content-Type`), when it gave one: a metalink's is followed.
    package var contentType: String?

    package init(file: String, path: String, bytes: Int64, skipped: Bool, notModified: Bool = false,
                 contentType: String? = nil) {
        self.file = file
        self.path = path
        self.bytes = bytes
        self.skipped = skipped
        self.notModified = notModified
        self.contentType = contentType
    }
}
