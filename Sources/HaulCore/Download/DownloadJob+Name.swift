extension DownloadJob {
    /// The name its file is planned under until the server answers (`-O`, or the URL's last segment made safe):
    /// what the queue and the screen show meanwhile, and what names a checksum list's entry.
    package var plannedName: String {
        outputName ?? FileNaming.name(contentDisposition: nil, url: url)
    }
}
