/// Values bound for the duration of one download's task.
package enum DownloadContext {
    /// Whether this download may end with partial data (a JPEG or PNG: a cancelled one keeps a preview).
    /// Bound with `withValue` around each download by `DownloadManager`; read in the download's task,
    /// never on the curl thread. Child tasks (segments) inherit it.
    @TaskLocal static var supportsPartialDownloads = false

    /// A name ending in .jpg, .jpeg or .png (any case): a picture whose prefix is worth showing.
    package static func isPartialCapable(name: String) -> Bool {
        let lower = name.lowercased()
        return FilePath.hasSuffix(lower, ".jpg") || FilePath.hasSuffix(lower, ".jpeg") || FilePath.hasSuffix(lower, ".png")
    }
}
