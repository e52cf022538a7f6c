/// What to do when the target file already exists.
package enum ExistingFilePolicy: String, Sendable, CaseIterable, Codable {
    /// Pick `name.1.ext`, `name.2.ext`, ...
    case rename
    case overwrite
    /// Leave the file and report the download as done.
    case skip
}
