import HaulCore
@testable import HaulTUI

/// States the render and update tests share.
enum Fixtures {
    static func row(_ id: DownloadID, _ name: String, _ state: DownloadState, completed: Int64 = 0,
                    total: Int64? = 20 << 20, speed: Double = 0) -> DownloadRow {
        var row = DownloadRow(id: id, url: "http://127.0.0.1:8080/files/download?\(name)", name: name)
        row.state = state
        row.completed = completed
        row.total = total
        row.bytesPerSecond = speed
        row.path = "downloads/\(name)"
        return row
    }

    static func state(_ size: Size, rows: [DownloadRow] = []) -> AppState {
        var state = AppState(size: size)
        state.rows = rows
        state.colors = true
        state.unicode = true
        return state
    }

    /// One row in each state the SPEC names, the clock running.
    static func mixed(_ size: Size) -> AppState {
        var cancelling = row(9, "large.bin", .downloading, completed: 50 << 20, total: 200 << 20, speed: 4_194_304)
        cancelling.pendingStop = .cancelled
        var preview = row(8, "photo-large.jpg", .cancelled, completed: 3 << 20, total: 6 << 20)
        preview.previewPath = "/d/photo-large.partial.jpg"
        var state = state(size, rows: [
            row(1, "medium.bin", .downloading, completed: 10_223_616, speed: 10_223_616),
            row(2, "small.bin", .queued, total: nil),
            row(3, "huge.bin", .connecting, total: nil),
            row(4, "notes.txt", .paused, completed: 5 << 20),
            row(5, "done.iso", .done, completed: 20 << 20),
            row(6, "missing.bin", .failed(HaulError(.server, "server answered 404 Not Found"))),
            row(7, "stopped.bin", .cancelled, completed: 1 << 20),
            preview,
            cancelling,
        ])
        state.elapsedSeconds = 42
        state.clockRunning = true
        state.selection = 0
        return state
    }

    static func files(_ size: Size) -> AppState {
        var state = state(size)
        state.view = .files
        state.files.server = "http://127.0.0.1:8080"
        state.files.status = "SuperStorage sample server: 4 files, 1.31 GB, rate 4.19 MB/s per connection"
        state.files.listing = .loaded([
            RemoteFile(name: "huge.bin", size: 1 << 30, date: "2025-01-31T12:00:00Z"),
            RemoteFile(name: "large.bin", size: 200 << 20, date: "2025-01-31T12:00:00Z"),
            RemoteFile(name: "medium.bin", size: 20 << 20, date: "2025-01-31T12:00:00Z"),
            RemoteFile(name: "small.bin", size: 1 << 20, date: "2025-01-31T12:00:00Z"),
        ])
        state.files.selection = 2
        var medium = row(1, "medium.bin", .downloading, completed: 10_223_616, speed: 10_223_616)
        medium.url = FilesAddress.download(server: "http://127.0.0.1:8080", name: "medium.bin")
        state.rows = [medium]
        state.clockRunning = true
        state.elapsedSeconds = 3
        return state
    }
}
